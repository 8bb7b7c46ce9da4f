"""The constrained linear pass of KAFKA-9987, for the uniform case: every client has the same capacity
and no client other than a task's owner holds state that should steer where the task goes.

Then the balanced assignment is known in closed form (each client gets floor or ceil of tasks/clients),
and a few linear passes reach it: keep owned tasks up to the client's quota (the ceil slots go to the
clients that own more than the floor, so nothing moves that balance does not need), then deal the rest
round-robin, in partition-major order so one partition's tasks spread over clients."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from .forced_replicas import ForcedReplicas
from .quotas import capacity_quotas, keep_owned, owned_counts
from .round_inputs import FillKey, RoundInputs
from .spread import SubtopologyShares


def constrained_applies(inputs: RoundInputs, pool: Sequence[int]) -> bool:
    """True when the linear pass gives the same quality as the general path: equal capacities, and no
    task that is not caught up everywhere by default has state on a client other than its owner."""
    if len(set(inputs.capacities)) > 1:
        return False
    owner, reports, default = inputs.owner, inputs.lags.reports, inputs.lags.default_caught_up
    # A report from another client: more than one report, or one that is not the owner's.
    return not any(
        (r := reports[t]) and not default[t] and (len(r) > 1 or owner[t] not in r) for t in pool
    )


def constrained_assign(
    pool: Sequence[int],
    owner: Sequence[int],
    rank: Sequence[int],
    movable: Sequence[bool],
    fill_key: FillKey | None,
    shares: SubtopologyShares | None = None,
    forced: ForcedReplicas | None = None,
) -> list[int]:
    """Returns the target client of each task of `pool` (a dict would cost more: indexed by position).

    rank: the clients' order for leftover tasks (RoundInputs.rank; its length is the client count).
    movable[t]: the task can leave its owner without a warm-up, so an owner above its quota gives it up
    before others. With `shares`, the targets (spread.py) fix every client's count of every
    subtopology, and the unassigned tasks are dealt within them. forced: for the stateful pool, the
    clients holding every task (quotas.capacity_quotas, and SubtopologyShares.start)."""
    n_clients = len(rank)
    weights = [1] * n_clients
    if shares is None:
        quotas = capacity_quotas(len(pool), weights, rank, owned_counts(pool, owner, n_clients), forced=forced)
    else:
        quotas = shares.start(owner, weights, None, forced.ceils_first() if forced is not None else ())
    target, kept, unassigned = keep_owned(pool, owner, quotas, lambda t: (movable[t], t), shares)
    if shares is not None:  # the targets fix every client's count of every subtopology
        shares.deal(sorted(unassigned), target)
        return [target[t] for t in pool]
    unassigned.sort(key=fill_key)
    need = deque((c, quotas[c] - kept[c]) for c in range(n_clients) if quotas[c] > kept[c])
    for t in unassigned:
        c, left = need.popleft()
        target[t] = c
        if left > 1:
            need.append((c, left - 1))
    return [target[t] for t in pool]
