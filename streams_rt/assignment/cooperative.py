"""KIP-429's hand-off rule. Under COOPERATIVE a member keeps its tasks through a rebalance, so a task
owned by A and planned for B is withheld from B this round: A is told to revoke it, and a follow-up
rebalance gives it to B once A has let go; meanwhile B holds it as a standby, so its copy of the state
stays caught up through the hand-off. Tasks nobody owns go straight to their client. Under EAGER
every member has already revoked everything, so the plan is handed out as is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streams_rt.protocol import RebalanceProtocol, TaskId

from .ownership import NO_OWNER


@dataclass(frozen=True, slots=True)
class HandOff:
    """Per client: active task numbers, revoked task numbers, and ignored claims to revoke (TaskIds,
    some of which may no longer exist). `withheld`: tasks nobody runs this round."""

    active: list[list[int]]
    revoke: list[list[int]]
    revoke_claims: list[list[TaskId]]
    withheld: list[int]


def hand_off(
    planned: Sequence[int],
    owner: Sequence[int],
    ignored_claims: Sequence[Sequence[TaskId]],
    protocol: RebalanceProtocol,
) -> HandOff:
    """planned[t]: the client task t should run on; owner[t]: its valid owner (KIP-341)."""
    n = len(ignored_claims)
    active: list[list[int]] = [[] for _ in range(n)]
    revoke: list[list[int]] = [[] for _ in range(n)]
    withheld: list[int] = []
    if protocol is RebalanceProtocol.EAGER:
        for t, dest in enumerate(planned):
            active[dest].append(t)
        return HandOff(active, revoke, [[] for _ in range(n)], withheld)
    for t, dest in enumerate(planned):
        prev = owner[t]
        if prev != NO_OWNER and prev != dest:
            revoke[prev].append(t)
            withheld.append(t)
        else:
            active[dest].append(t)
    # An ignored claim is never kept: if the task is planned for its claimer it is withheld like any
    # other move, because the valid owner must let go first.
    revoke_claims = [list(claims) for claims in ignored_claims]
    return HandOff(active, revoke, revoke_claims, withheld)
