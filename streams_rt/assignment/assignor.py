"""`assign`: one rebalance round of the high-availability sticky assignor.

Order of work: resolve ownership (KIP-341) -> lags -> balanced sticky target for stateful and then
stateless actives (constrained linear pass when it applies, else the general path) -> keep actives on
caught-up clients (pending moves) -> standbys -> warm-ups -> cooperative hand-off. Pure and
deterministic: clients are numbered in process-id order and tasks in TaskId order, so the input order
never matters."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from itertools import pairwise
from types import MappingProxyType

from streams_rt.protocol import RebalanceProtocol, TaskId

from .active_placement import general_assign
from .constrained import constrained_applies, constrained_assign
from .cooperative import hand_off
from .drain import assign_with_draining
from .forced_replicas import ForcedReplicas
from .model import (
    AssignmentConfigs,
    AssignmentResult,
    ClientAssignment,
    ClientState,
    TaskTopology,
)
from .ownership import NO_OWNER
from .quotas import joint_bounds
from .round_inputs import number_round, sorted_unique
from .spread import SubtopologyShares
from .standby_placement import place_standbys
from .warmups import PendingMove, choose_warmups, gate_to_caught_up


def assign(
    tasks: TaskTopology | Collection[TaskId],
    clients: Collection[ClientState],
    changelog_end_offsets: Mapping[TaskId, int],
    configs: AssignmentConfigs,
    protocol: RebalanceProtocol,
    now_ms: int,
    *,
    stateless: Collection[TaskId] = (),
) -> AssignmentResult:
    """Assign every task to the given clients.

    A task is stateful (has changelogs: lags, standbys, warm-ups) when it appears in
    `changelog_end_offsets` (its changelog end-offset sum) and is not listed as stateless; any other
    task is stateless and can run anywhere. Raises ValueError on duplicate process ids."""
    if isinstance(tasks, TaskTopology):
        stateless = [*stateless, *tasks.stateless_tasks()]
        tasks = list(tasks.tasks())
    if any(c.draining for c in clients):
        return assign_with_draining(assign, tasks, clients, changelog_end_offsets, configs, protocol, now_ms, stateless)
    ordered = sorted_unique(tasks)
    states = sorted(clients, key=lambda s: s.process_id)
    for a, b in pairwise(states):
        if a.process_id == b.process_id:
            raise ValueError(f"client {a.process_id} appears twice")
    if not states:
        return AssignmentResult(MappingProxyType({}), False, None)
    if not ordered:
        empty = ClientAssignment()
        return AssignmentResult(MappingProxyType({s.process_id: empty for s in states}), False, None)

    inputs = number_round(ordered, states, changelog_end_offsets, stateless, configs)
    n, end, owner, lags = len(states), inputs.end, inputs.owner, inputs.lags

    planned = [0] * len(ordered)
    pending: list[PendingMove] = []
    active_load = [0] * n
    # Where the actives end up once the pending moves are made, the stateless ones filling up around
    # that: the standbys are planned around it, so the round after the moves keeps them. Meanwhile the
    # stateless tasks fill up the least loaded clients around where the moving tasks run now, whatever
    # the subtopology shares: they need no state, so they move at no cost and the threads are as even
    # now as the waiting tasks allow (as Kafka's assignor fills them), and the round after the moves
    # spreads each subtopology again.
    target_load = [0] * n
    stateful_pool = [t for t in range(len(ordered)) if end[t] is not None]
    stateless_pool = [t for t in range(len(ordered)) if end[t] is None]
    bounds = joint_bounds(stateful_pool, stateless_pool, inputs.subtopology, inputs.capacities, inputs.rank)
    for pool in (stateful_pool, stateless_pool):
        if not pool:
            continue
        if constrained_applies(inputs, pool) and not any(target_load):
            # Where the pass applies, a task that is not caught up by default has state on its owner
            # only, so it can leave its owner without a warm-up exactly when it is caught up by default.
            shares = SubtopologyShares.of(pool, inputs.subtopology, inputs.rank)
            forced = ForcedReplicas.of(states, configs) if pool is stateful_pool else None
            target = constrained_assign(
                pool, owner, inputs.rank, lags.default_caught_up, inputs.fill_key, shares, forced
            )
        else:  # the stateless pool fills up what the stateful one left
            fills_up = pool is stateless_pool
            target = general_assign(inputs, pool, target_load if fills_up else None, None if fills_up else bounds)
        placed, moves = gate_to_caught_up(inputs, pool, target)
        if pool is stateless_pool and pending:  # this round: around where the moving tasks run meanwhile
            planned_owner = list(owner)
            for t, d in zip(pool, target, strict=True):
                planned_owner[t] = d
            placed = general_assign(inputs, pool, active_load, spread=False, keep=planned_owner)
        pending.extend(moves)
        for t, c, d in zip(pool, placed, target, strict=True):
            planned[t] = c
            active_load[c] += 1
            target_load[d] += 1

    pending_target = {m.task: m.target for m in pending}
    plan = place_standbys(inputs, stateful_pool, planned, pending_target, target_load)
    standby_of = plan.standby_of
    warmups = choose_warmups(pending, standby_of, plan.waiting, lags, configs.max_warmup_replicas)

    holder, claims = owner, inputs.ignored
    if any(s.revoked_all for s in states):  # EAGER clients ran these tasks but hold nothing: no hand-off waits
        holder = [NO_OWNER if c != NO_OWNER and states[c].revoked_all else c for c in owner]
        claims = [[] if s.revoked_all else i for s, i in zip(states, inputs.ignored, strict=True)]
    handed = hand_off(planned, holder, claims, protocol)
    standby: list[set[int]] = [set() for _ in range(n)]
    for t in stateful_pool:
        for c in standby_of[t]:
            standby[c].add(t)
    for t in handed.withheld:
        if end[t] is not None:
            standby[planned[t]].add(t)
    warm: list[list[int]] = [[] for _ in range(n)]
    for m in warmups:
        warm[m.target].append(m.task)
        standby[m.target].add(m.task)

    result = {
        s.process_id: ClientAssignment(
            frozenset([ordered[t] for t in handed.active[c]]),
            frozenset([ordered[t] for t in standby[c]]),
            frozenset([ordered[t] for t in warm[c]]),
            frozenset([*(ordered[t] for t in handed.revoke[c]), *handed.revoke_claims[c]]),
        )
        for c, s in enumerate(states)
    }
    probing_at = now_ms + configs.probing_rebalance_interval_ms if pending or plan.waiting else None
    return AssignmentResult(MappingProxyType(result), bool(handed.withheld), probing_at)
