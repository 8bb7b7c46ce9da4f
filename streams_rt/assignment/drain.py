"""A graceful drain: clients marked `draining` are a destination for nothing, and give up each of
their active tasks only once the client chosen to take it is caught up (KIP-441's rule, within
`acceptable.recovery.lag`); until then that client warms the task up and the draining one keeps
running it. So no task is without an active owner beyond the cooperative hand-off (revoke in one
round, assign in the follow-up). The other clients are assigned as if the draining ones were gone."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType

from streams_rt.protocol import RebalanceProtocol, TaskId

from .lag import is_caught_up
from .model import AssignmentConfigs, AssignmentResult, ClientAssignment, ClientState

# While a draining client waits for warm-ups, rounds come this often to see them catch up (members
# report their offsets when they rejoin), not at `probing.rebalance.interval.ms` (10 minutes).
DRAIN_PROBING_INTERVAL_MS = 2_000

Assign = Callable[..., AssignmentResult]


def assign_with_draining(
    assign: Assign,
    tasks: Collection[TaskId],
    clients: Collection[ClientState],
    changelog_end_offsets: Mapping[TaskId, int],
    configs: AssignmentConfigs,
    protocol: RebalanceProtocol,
    now_ms: int,
    stateless: Collection[TaskId],
) -> AssignmentResult:
    """`assign` (the assignor) for the clients that stay, then each draining client's actives held
    back until their new owner is caught up. With no client staying, nobody drains: everything
    stays where it runs."""
    staying = [c for c in clients if not c.draining]
    if not staying:
        return assign(tasks, [dataclasses.replace(c, draining=False) for c in clients], changelog_end_offsets,
                      configs, protocol, now_ms, stateless=stateless)
    inner = assign(tasks, staying, changelog_end_offsets, configs, protocol, now_ms, stateless=stateless)
    out: dict[uuid.UUID, ClientAssignment] = dict(inner.clients)
    owner_of = {t: pid for pid, a in inner.clients.items() for t in a.active}
    by_pid = {c.process_id: c for c in staying}
    stateless_tasks = frozenset(stateless)
    followup, waiting = inner.followup_rebalance, False
    for client in sorted(clients, key=lambda c: c.process_id):
        if not client.draining:
            continue
        keep: set[TaskId] = set()
        revoke: set[TaskId] = set()
        for task in sorted(t for t in client.owned_active if t in owner_of):
            if client.revoked_all:  # EAGER: it holds nothing any more, so nothing waits for it
                continue
            target = owner_of[task]
            end = None if task in stateless_tasks else changelog_end_offsets.get(task)
            caught_up = is_caught_up(end, by_pid[target].task_offset_sums.get(task), configs.acceptable_recovery_lag)
            a = out[target]
            if caught_up:  # revoked now, assigned in the follow-up round; the target keeps its state warm
                out[target] = ClientAssignment(a.active - {task}, a.standby | ({task} if end is not None else set()),
                                               a.warmup, a.revoke)
                revoke.add(task)
                followup = True
            else:  # the target warms it up; the draining client runs it meanwhile
                out[target] = ClientAssignment(a.active - {task}, a.standby | {task}, a.warmup | {task}, a.revoke)
                keep.add(task)
                waiting = True
        out[client.process_id] = ClientAssignment(active=frozenset(keep), revoke=frozenset(revoke))
    probing = inner.probing_rebalance_at_ms
    if waiting:
        soon = now_ms + DRAIN_PROBING_INTERVAL_MS
        probing = soon if probing is None else min(probing, soon)
    return AssignmentResult(MappingProxyType(out), followup, probing)
