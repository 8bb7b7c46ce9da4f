"""A draining client (assignment/drain.py): it gets nothing new, keeps each active until the client
taking it is caught up, and ends with nothing; at no round is a task without an active owner other
than through the cooperative hand-off (revoked in one round, assigned in the next)."""

from __future__ import annotations

import dataclasses
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.assignment import AssignmentConfigs, AssignmentResult, ClientState, RebalanceProtocol, assign
from streams_rt.assignment.drain import DRAIN_PROBING_INTERVAL_MS
from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, TaskId

COOP = RebalanceProtocol.COOPERATIVE
A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))
T = [TaskId(0, p) for p in range(6)]
ENDS = {t: 1_000 for t in T}
CONFIGS = AssignmentConfigs(acceptable_recovery_lag=100, num_standby_replicas=0)


def client(pid: uuid.UUID, active: list[TaskId], sums: dict[TaskId, int] | None = None,
           draining: bool = False) -> ClientState:
    return ClientState(pid, owned_active={t: 1 for t in active},
                       task_offset_sums={**{t: OFFSET_SUM_RUNNING_ACTIVE for t in active}, **(sums or {})},
                       draining=draining)


def round_of(clients: list[ClientState], now_ms: int = 0) -> AssignmentResult:
    return assign(T, clients, ENDS, CONFIGS, COOP, now_ms)


def test_a_draining_client_keeps_its_actives_while_their_new_owners_warm_up() -> None:
    result = round_of([client(A, T[:2], draining=True), client(B, T[2:4]), client(C, T[4:])])
    drained = result.clients[A]
    assert drained.active == set(T[:2]) and not drained.standby and not drained.revoke
    warming = result.clients[B].warmup | result.clients[C].warmup
    assert warming == set(T[:2])
    assert not (result.clients[B].active | result.clients[C].active) & set(T[:2])
    assert result.probing_rebalance_at_ms == DRAIN_PROBING_INTERVAL_MS and not result.followup_rebalance


def test_a_caught_up_warm_up_takes_the_task_through_a_cooperative_hand_off() -> None:
    first = round_of([client(A, T[:2], draining=True), client(B, T[2:4]), client(C, T[4:])])
    target = next(pid for pid in (B, C) if T[0] in first.clients[pid].warmup)
    sums = {T[0]: 950}  # within acceptable.recovery.lag (100) of the end (1000)
    others = {B: T[2:4], C: T[4:]}
    clients = [client(A, T[:2], draining=True)] + [client(pid, tasks, sums if pid == target else None)
                                                    for pid, tasks in others.items()]
    second = round_of(clients)
    assert second.clients[A].revoke == {T[0]} and second.clients[A].active == {T[1]}
    assert second.followup_rebalance
    assert all(T[0] not in a.active for a in second.clients.values())
    # The follow-up: A no longer claims T0, and its target takes it.
    clients[0] = client(A, [T[1]], draining=True)
    third = round_of(clients)
    assert T[0] in third.clients[target].active and third.clients[A].active == {T[1]}


def test_a_stateless_or_default_caught_up_task_leaves_at_once() -> None:
    small = {t: 50 for t in T}  # every changelog within the acceptable lag: caught up everywhere
    result = assign(T, [client(A, T[:2], draining=True), client(B, T[2:])], small, CONFIGS, COOP, 0)
    assert result.clients[A].revoke == set(T[:2]) and not result.clients[A].active and result.followup_rebalance


def test_with_nobody_to_take_over_nothing_moves() -> None:
    result = round_of([client(A, T, draining=True)])
    assert result.clients[A].active == set(T)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([A, B, C]), min_size=len(T), max_size=len(T)), st.sampled_from([A, B, C]),
       st.lists(st.integers(0, 1_000), min_size=len(T), max_size=len(T)))
def test_every_round_of_a_drain_leaves_each_task_owned_or_handed_off(owners: list[uuid.UUID],
                                                                     leaving: uuid.UUID, warm: list[int]) -> None:
    """Round after round, warm-ups progressing: every task is active on one client or revoked by its
    owner (handed over in the next round); the draining client never gains a task and ends empty."""
    held = {pid: [t for t, o in zip(T, owners, strict=True) if o == pid] for pid in (A, B, C)}
    progress = dict(zip(T, warm, strict=True))
    for generation in range(12):
        clients = [dataclasses.replace(client(pid, held[pid], {t: progress[t] for t in T if t not in held[pid]}),
                                       draining=pid == leaving) for pid in (A, B, C)]
        result = round_of(clients)
        for task in T:
            actives = [pid for pid, a in result.clients.items() if task in a.active]
            revoking = [pid for pid, a in result.clients.items() if task in a.revoke]
            assert len(actives) + len(revoking) == 1, (generation, task, result)
        assert result.clients[leaving].active <= set(held[leaving])
        held = {pid: sorted(a.active) for pid, a in result.clients.items()}
        progress = {t: min(1_000, v + 400) for t, v in progress.items()}  # warm-ups catch up
    assert not held[leaving]
