"""Behaviour of single rounds: configuration, topology, KIP-341 stale ownership, KIP-429 hand-off,
KIP-441 warm-ups and probing, standby placement, and the constrained linear pass."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.assignment import (
    AssignmentConfigs,
    AssignmentResult,
    ClientState,
    RebalanceProtocol,
    TaskTopology,
    assign,
)
from streams_rt.assignment.active_placement import general_assign
from streams_rt.assignment.constrained import constrained_assign
from streams_rt.assignment.kafka_criterion import kafka_counts
from streams_rt.assignment.ownership import NO_OWNER
from streams_rt.assignment.round_inputs import number_round
from streams_rt.assignment.standby_room import StandbyRoom
from streams_rt.config import ConfigError
from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, TaskId

COOP, EAGER = RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER
A, B, C, D = (uuid.UUID(int=i) for i in (1, 2, 3, 4))
T = [TaskId(0, p) for p in range(4)]


def running(pid: uuid.UUID, tasks: list[TaskId], generation: int = 1, **kw: Any) -> ClientState:
    return ClientState(
        pid,
        owned_active={t: generation for t in tasks},
        task_offset_sums={t: OFFSET_SUM_RUNNING_ACTIVE for t in tasks},
        **kw,
    )


def test_configs_from_kafka_property_names() -> None:
    required = {"application.id": "app", "bootstrap.servers": "127.0.0.1:9092"}
    c = AssignmentConfigs.from_properties(
        {
            **required,
            "num.standby.replicas": "2",
            "acceptable.recovery.lag": 5,
            "max.warmup.replicas": 3,
            "probing.rebalance.interval.ms": 60_000,
            "rack.aware.assignment.tags": "zone, rack",
        }
    )
    assert c == AssignmentConfigs(2, 5, 3, 60_000, ("zone", "rack"))
    assert AssignmentConfigs.from_properties(required) == AssignmentConfigs() == AssignmentConfigs(
        0, 10_000, 2, 600_000, ()
    )
    with pytest.raises(ValueError, match="max.warmup.replicas"):
        AssignmentConfigs(max_warmup_replicas=0)
    with pytest.raises(ConfigError, match="num.standby.replicas"):
        AssignmentConfigs.from_properties({**required, "num.standby.replicas": "two"})
    with pytest.raises(ConfigError, match="rack.aware.assignment.tags"):
        AssignmentConfigs.from_properties({**required, "rack.aware.assignment.tags": 3})


def test_topology_checks_co_partitioning_and_marks_stateless_tasks() -> None:
    with pytest.raises(ValueError, match="disagree"):
        TaskTopology({0: 4, 1: 3}, copartition_groups=(frozenset({0, 1}),))
    topo = TaskTopology({0: 2, 1: 2}, copartition_groups=(frozenset({0, 1}),), stateless=frozenset({1}))
    assert list(topo.tasks()) == [TaskId(0, 0), TaskId(0, 1), TaskId(1, 0), TaskId(1, 1)]
    clients = [ClientState(A), ClientState(B)]
    r = assign(topo, clients, {TaskId(0, 0): 0, TaskId(0, 1): 0}, AssignmentConfigs(1), EAGER, 0)
    standbys = set().union(*(a.standby for a in r.clients.values()))
    assert standbys == {TaskId(0, 0), TaskId(0, 1)}  # no standbys for stateless tasks
    assert sum(len(a.active) for a in r.clients.values()) == 4


def test_stale_claim_from_older_generation_is_ignored() -> None:
    t = T[0]
    clients = [running(A, [t], generation=3), running(B, [t], generation=5), ClientState(C)]
    r = assign([t], clients, {t: 100_000}, AssignmentConfigs(), COOP, 0)
    assert r.clients[B].active == {t}
    assert r.clients[A].revoke == {t} and not r.clients[A].active
    assert not r.followup_rebalance  # the stale owner was fenced: nothing to wait for


def test_cooperative_withholds_a_moving_task_until_it_is_revoked() -> None:
    end = {t: 0 for t in T}  # everyone is caught up
    first = assign(T, [running(A, T), ClientState(B)], end, AssignmentConfigs(), COOP, 0)
    a, b = first.clients[A], first.clients[B]
    assert len(a.active) == 2 and len(a.revoke) == 2 and not b.active
    assert b.standby == a.revoke  # the next owner keeps the state warm through the hand-off
    assert first.followup_rebalance and first.probing_rebalance_at_ms is None
    kept = sorted(a.active)
    second = assign(T, [running(A, kept, 2), ClientState(B)], end, AssignmentConfigs(), COOP, 1)
    assert second.clients[B].active == a.revoke and second.clients[A].active == set(kept)
    assert not second.followup_rebalance


def test_eager_assigns_directly() -> None:
    end = {t: 0 for t in T}
    r = assign(T, [running(A, T), ClientState(B)], end, AssignmentConfigs(), EAGER, 0)
    assert len(r.clients[A].active) == len(r.clients[B].active) == 2
    assert not r.clients[A].revoke and not r.followup_rebalance


def test_task_nobody_owns_goes_directly_and_unknown_tasks_are_revoked() -> None:
    gone = TaskId(9, 9)
    r = assign(T, [running(A, [gone]), ClientState(B)], {t: 0 for t in T}, AssignmentConfigs(), COOP, 0)
    assert sum(len(a.active) for a in r.clients.values()) == 4
    assert r.clients[A].revoke == {gone} and not r.followup_rebalance


def test_lagging_target_gets_warmups_and_a_probing_rebalance() -> None:
    end = {t: 100_000 for t in T}
    configs = AssignmentConfigs(max_warmup_replicas=1, probing_rebalance_interval_ms=60_000)
    r = assign(T, [running(A, T), ClientState(B)], end, configs, COOP, 5_000)
    assert r.clients[A].active == set(T) and not r.clients[B].active  # B is not caught up
    assert len(r.clients[B].warmup) == 1 and r.clients[B].warmup <= r.clients[B].standby
    assert r.probing_rebalance_at_ms == 65_000 and not r.followup_rebalance
    # Once the warm-up has caught up, that task moves (cooperatively: revoke first).
    warm = next(iter(r.clients[B].warmup))
    b = ClientState(B, owned_standby=frozenset({warm}), task_offset_sums={warm: 99_000})
    r2 = assign(T, [running(A, T, 2), b], end, configs, COOP, 70_000)
    assert r2.clients[A].revoke == {warm} and r2.followup_rebalance
    assert r2.probing_rebalance_at_ms == 130_000  # one more task still has to move


def test_with_nobody_caught_up_the_active_goes_to_the_least_lag_and_its_target_warms_up() -> None:
    """KIP-441: B has the least lag on both tasks, though nobody is caught up; balance wants one task on A."""
    end = {T[0]: 100_000, T[1]: 100_000}
    b = ClientState(B, task_offset_sums={T[0]: 60_000, T[1]: 70_000})
    r = assign(T[:2], [ClientState(A), b], end, AssignmentConfigs(), COOP, 0)
    assert r.clients[B].active == {T[0], T[1]} and not r.clients[A].active
    assert len(r.clients[A].warmup) == 1 and r.probing_rebalance_at_ms is not None


def test_caught_up_standby_takes_over_when_the_owner_leaves() -> None:
    t = T[0]
    end = {t: 100_000}
    b = ClientState(B, owned_standby=frozenset({t}), task_offset_sums={t: 99_500})
    r = assign([t], [b, ClientState(C)], end, AssignmentConfigs(num_standby_replicas=1), COOP, 0)
    assert r.clients[B].active == {t} and r.clients[C].standby == {t}
    assert r.probing_rebalance_at_ms is None


def test_a_new_client_warms_up_standbys_before_they_leave_caught_up_clients() -> None:
    """Balance wants standbys on the new client C, which holds nothing: each task keeps its caught-up
    standby on A or B meanwhile, and C gets warm-ups, within max.warmup.replicas."""
    end = {t: 100_000 for t in T}
    a = running(A, T[:2], owned_standby=frozenset(T[2:]))
    b = running(B, T[2:], owned_standby=frozenset(T[:2]))
    a = ClientState(A, owned_active=a.owned_active, owned_standby=a.owned_standby,
                    task_offset_sums={**a.task_offset_sums, T[2]: 100_000, T[3]: 100_000})
    b = ClientState(B, owned_active=b.owned_active, owned_standby=b.owned_standby,
                    task_offset_sums={**b.task_offset_sums, T[0]: 100_000, T[1]: 100_000})
    configs = AssignmentConfigs(num_standby_replicas=1, max_warmup_replicas=1)
    r = assign(T, [a, b, ClientState(C)], end, configs, COOP, 0)
    c = r.clients[C]
    assert c.standby == c.warmup and len(c.warmup) == 1 and not c.active
    for t in T:
        hot = [pid for pid in (A, B) if t in r.clients[pid].standby]
        assert len(hot) == 1, f"{t} keeps its caught-up standby"
    assert r.probing_rebalance_at_ms is not None


def test_standbys_prefer_state_and_spread_over_tags() -> None:
    t = T[0]
    end = {t: 100_000}
    holder = ClientState(C, tags={"zone": "z2"}, task_offset_sums={t: 90_000})
    clients = [
        running(A, [t], tags={"zone": "z1"}),
        ClientState(B, tags={"zone": "z1"}),
        holder,
        ClientState(D, tags={"zone": "z3"}),
    ]
    r = assign([t], clients, end, AssignmentConfigs(num_standby_replicas=1), EAGER, 0)
    assert r.clients[C].standby == {t}  # it already holds most of the state
    tagged = AssignmentConfigs(num_standby_replicas=2, rack_aware_assignment_tags=("zone",))
    r = assign([t], clients, end, tagged, EAGER, 0)
    holders = {pid for pid, a in r.clients.items() if t in a.standby}
    assert holders == {C, D}  # zones z2 and z3: never the active's zone z1 while others exist


def test_when_no_client_passes_the_tag_rule_the_rule_is_checked_again_for_the_next_standby() -> None:
    """Nobody passes for the first standby of the task running on a1 (every other client is in zone a
    or on rack r1); a2, which adds an unused rack, takes it. That uses up the racks, so b1 in the
    unused zone b passes for the second, not a3 in the active's own zone, although a3 comes first by
    load and process id."""
    t = T[0]
    a1, a2, a3, b1, b2 = (uuid.UUID(int=i) for i in range(1, 6))  # process-id order
    where = {a1: ("a", "r1"), a2: ("a", "r2"), a3: ("a", "r1"), b1: ("b", "r1"), b2: ("b", "r1")}
    clients = [
        ClientState(
            pid, tags={"zone": zone, "rack": rack}, owned_active={t: 1} if pid == a1 else {},
            task_offset_sums={t: OFFSET_SUM_RUNNING_ACTIVE} if pid == a1 else {},
        )
        for pid, (zone, rack) in where.items()
    ]
    configs = AssignmentConfigs(num_standby_replicas=2, rack_aware_assignment_tags=("zone", "rack"))
    r = assign([t], clients, {t: 0}, configs, EAGER, 0)
    assert {pid for pid, a in r.clients.items() if t in a.standby} == {a2, b1}


def _fed_back(result: AssignmentResult, states: list[ClientState], generation: int) -> list[ClientState]:
    """The group after applying `result`: actives running, standbys caught up (changelogs of length 0)."""
    return [
        ClientState(
            s.process_id, s.capacity, owned_active={t: generation for t in result.clients[s.process_id].active},
            owned_standby=result.clients[s.process_id].standby,
            task_offset_sums={t: 0 for t in result.clients[s.process_id].standby},
        )
        for s in states
    ]


def test_each_subtopology_spreads_over_the_clients_and_stays_spread_after_joins_and_departures() -> None:
    """10 subtopologies x 20 partitions on 10 clients: 2 tasks of each subtopology per client (dealing
    them round robin in partition order would give every client 20 partitions of one subtopology).
    After a client joins, and after two leave, no client runs more than its share of a subtopology."""
    tasks = [TaskId(s, p) for s in range(10) for p in range(20)]
    end = {t: 0 for t in tasks}
    states = [ClientState(uuid.UUID(int=i + 1)) for i in range(10)]
    for event in ("start", "join", "leave"):
        if event == "join":
            states = [*states, ClientState(uuid.UUID(int=99))]
        elif event == "leave":
            states = states[2:]
        r = assign(tasks, states, end, AssignmentConfigs(), EAGER, 0)
        for a in r.clients.values():
            per_sub = [sum(1 for t in a.active if t.subtopology == s) for s in range(10)]
            assert max(per_sub) <= -(-20 // len(states)), f"{event}: {per_sub} on {len(states)} clients"
        again = assign(tasks, _fed_back(r, states, 1), end, AssignmentConfigs(), EAGER, 0)
        assert again.clients == r.clients  # and it is a fixpoint
        states = _fed_back(r, states, 1)


def test_stateless_tasks_fill_up_the_clients_the_stateful_ones_left_short() -> None:
    """5 stateful and 5 stateless tasks on 4 equal clients; A runs 2 of each, the others 1 of each.
    The stateful leftover stays with A; the stateless one must not (balancing each pool alone, A would
    keep both and run 4 tasks while the others run 2): every client runs 2 or 3."""
    full, light = [TaskId(0, p) for p in range(5)], [TaskId(1, p) for p in range(5)]
    owned = {A: [0, 1], B: [2], C: [3], D: [4]}
    states = [running(pid, [full[i] for i in ps] + [light[i] for i in ps]) for pid, ps in owned.items()]
    r = assign(full + light, states, {t: 0 for t in full}, AssignmentConfigs(), EAGER, 0)
    assert len(r.clients[A].active & set(full)) == 2
    totals = {pid: len(a.active) for pid, a in r.clients.items()}
    assert sorted(totals.values()) == [2, 2, 3, 3], totals


def test_a_stateless_subtopology_spreads_by_capacity_even_where_the_stateful_pool_left_clients_short() -> None:
    """9 equal clients, 24 stateful tasks (the first 3 clients run 2, the others 3, and keep them) and
    one stateless subtopology of 27: each client runs exactly 3 of it. Filling up the short clients
    first would give them 4 of it (a third more than their share when it runs hot)."""
    full, light = [TaskId(0, p) for p in range(24)], [TaskId(1, p) for p in range(27)]
    pids = [uuid.UUID(int=i + 1) for i in range(9)]
    owned = [full[0:2], full[2:4], full[4:6], *(full[i : i + 3] for i in range(6, 24, 3))]
    states = [running(pid, ts) for pid, ts in zip(pids, owned, strict=True)]
    r = assign(full + light, states, {t: 0 for t in full}, AssignmentConfigs(), EAGER, 0)
    assert [len(r.clients[pid].active & set(full)) for pid in pids] == [2, 2, 2, 3, 3, 3, 3, 3, 3]
    assert [len(r.clients[pid].active & set(light)) for pid in pids] == [3] * 9


@pytest.mark.parametrize("stateful", [True, False])
def test_with_capacities_that_differ_the_threads_are_as_even_as_the_shares_allow(stateful: bool) -> None:
    """18 tasks over capacities 1, 1, 2, 2, 3, 1, 3, 2, 2, 2, 1, 3 (23 threads). Floor and ceil of each
    capacity share allow a one-thread client 0 tasks while a three-thread one runs 3 (1 per thread); as
    even as they allow is 1 per thread on the small clients and 2 on the large ones (max - min 0.5, what
    Kafka's assignor reaches). Both for a stateful pool and for stateless tasks, and it is a fixpoint."""
    tasks = [TaskId(0, p) for p in range(18)]
    end = {t: 0 for t in tasks} if stateful else {}
    caps = [1, 1, 2, 2, 3, 1, 3, 2, 2, 2, 1, 3]
    states = [ClientState(uuid.UUID(int=i + 1), capacity=cap) for i, cap in enumerate(caps)]
    r = assign(tasks, states, end, AssignmentConfigs(), EAGER, 0)
    per_thread = [len(r.clients[s.process_id].active) / s.capacity for s in states]
    assert max(per_thread) - min(per_thread) == 0.5, per_thread
    fed = [
        ClientState(s.process_id, capacity=s.capacity,
                    owned_active={t: 1 for t in r.clients[s.process_id].active},
                    task_offset_sums={t: OFFSET_SUM_RUNNING_ACTIVE for t in r.clients[s.process_id].active})
        for s in states
    ]
    assert assign(tasks, fed, end, AssignmentConfigs(), EAGER, 0).clients == r.clients


def test_rack_aware_standbys_even_out_within_a_zone_after_a_client_joins_it() -> None:
    """Zones of 6, 4 and 2 clients, one standby that may not share its active's zone. A client joins
    zone a: its standbys (only of tasks active in b or c) come within one of the other zone-a clients'
    (before, nothing moved to it once every client was at the ceil of its share of all tasks)."""
    tasks = [TaskId(s, p) for s in range(6) for p in range(20)]
    end = {t: 0 for t in tasks}
    configs = AssignmentConfigs(num_standby_replicas=1, rack_aware_assignment_tags=("zone",))
    zones = dict(zip((uuid.UUID(int=i + 1) for i in range(12)), "aaaaaabbbbcc", strict=True))
    states = [ClientState(pid, tags={"zone": z}) for pid, z in zones.items()]
    r = assign(tasks, states, end, configs, EAGER, 0)
    new = uuid.UUID(int=99)
    zones[new] = "a"
    fed = [
        ClientState(s.process_id, tags=s.tags, owned_active={t: 1 for t in r.clients[s.process_id].active},
                    owned_standby=r.clients[s.process_id].standby,
                    task_offset_sums={t: 0 for t in r.clients[s.process_id].standby})
        for s in states
    ]
    r = assign(tasks, [*fed, ClientState(new, tags={"zone": "a"})], end, configs, EAGER, 0)
    zone_a = [len(a.standby) for pid, a in r.clients.items() if zones[pid] == "a"]
    assert max(zone_a) - min(zone_a) <= 1, zone_a


def test_duplicate_clients_are_rejected_and_no_clients_give_an_empty_result() -> None:
    with pytest.raises(ValueError, match="twice"):
        assign(T, [ClientState(A), ClientState(A)], {}, AssignmentConfigs(), EAGER, 0)
    r = assign(T, [], {}, AssignmentConfigs(), EAGER, 0)
    assert not r.clients and not r.followup_rebalance


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 12), st.integers(1, 60), st.data())
def test_linear_pass_moves_no_more_than_the_general_path(n: int, n_tasks: int, data: st.DataObject) -> None:
    """In the uniform case the KAFKA-9987 linear pass and the general path agree on quality."""
    owner = [data.draw(st.integers(NO_OWNER, n - 1)) for _ in range(n_tasks)]
    tasks = [TaskId(0, p) for p in range(n_tasks)]
    clients = [
        ClientState(uuid.UUID(int=c + 1), owned_active={t: 1 for t, o in zip(tasks, owner, strict=True) if o == c})
        for c in range(n)
    ]
    inputs = number_round(tasks, clients, {t: 0 for t in tasks}, (), AssignmentConfigs())
    assert inputs.owner == owner
    pool = list(range(n_tasks))
    linear = constrained_assign(pool, owner, inputs.rank, [True] * n_tasks, inputs.fill_key)
    general = general_assign(inputs, pool)
    for placed in (linear, general):
        loads = [placed.count(c) for c in range(n)]
        assert max(loads) - min(loads) <= 1

    def moved(placed: list[int]) -> int:
        return sum(1 for t in pool if owner[t] != NO_OWNER and placed[t] != owner[t])

    assert moved(linear) == moved(general)


def test_clients_joining_one_that_runs_everything_get_what_needs_no_restore_at_once_and_the_rest_by_probing() -> None:
    """Hosts started one after another: A took every task at the first round; B and C join with no
    state. Stateless tasks and a task whose changelog is within acceptable.recovery.lag move to them
    in the hand-off's follow-up round; tasks with long changelogs stay on A while B and C warm them up
    (max.warmup.replicas at a time) and move at the probing rebalance after those caught up, as in
    Kafka's HighAvailabilityTaskAssignor. Nothing waits once the group is balanced."""
    short, long_ = [TaskId(0, p) for p in range(2)], [TaskId(1, p) for p in range(4)]
    light = [TaskId(2, p) for p in range(3)]
    tasks = short + long_ + light
    end = {**{t: 5_000 for t in short}, **{t: 100_000 for t in long_}}
    configs = AssignmentConfigs(probing_rebalance_interval_ms=60_000)

    def fed_back(r: AssignmentResult, generation: int, warmed: bool) -> list[ClientState]:
        """Running actives; standbys report their sums, the whole changelog once `warmed`, else nothing."""
        return [
            ClientState(pid, owned_active={t: generation for t in a.active}, owned_standby=a.standby,
                        task_offset_sums={**{t: end[t] if warmed else 0 for t in a.standby},
                                          **{t: OFFSET_SUM_RUNNING_ACTIVE for t in a.active}})
            for pid, a in r.clients.items()
        ]

    states = [running(A, tasks), ClientState(B), ClientState(C)]
    first = assign(tasks, states, end, configs, COOP, 0, stateless=light)
    assert first.followup_rebalance and first.probing_rebalance_at_ms == 60_000
    revoked = first.clients[A].revoke
    assert revoked and revoked <= set(short) | set(light), "only what needs no restore leaves A now"
    warming = first.clients[B].warmup | first.clients[C].warmup
    assert len(warming) == configs.max_warmup_replicas and warming <= set(long_)

    follow_up = assign(tasks, fed_back(first, 2, warmed=False), end, configs, COOP, 0, stateless=light)
    assert revoked <= follow_up.clients[B].active | follow_up.clients[C].active
    assert not follow_up.followup_rebalance and follow_up.probing_rebalance_at_ms == 60_000
    assert follow_up.clients[B].warmup | follow_up.clients[C].warmup == warming, "warm-ups keep their slots"

    r, now, generation = follow_up, 60_000, 3
    for _ in range(6):  # probing rounds (each with its hand-off) until nothing warms up
        r = assign(tasks, fed_back(r, generation, warmed=True), end, configs, COOP, now, stateless=light)
        generation += 1
        if r.followup_rebalance:
            r = assign(tasks, fed_back(r, generation, warmed=False), end, configs, COOP, now, stateless=light)
            generation += 1
        if r.probing_rebalance_at_ms is None:
            break
        assert r.probing_rebalance_at_ms == now + configs.probing_rebalance_interval_ms
        now = r.probing_rebalance_at_ms
    assert r.probing_rebalance_at_ms is None and not r.followup_rebalance
    assert sorted(len(a.active) for a in r.clients.values()) == [3, 3, 3]
    assert all(len(a.active & set(long_)) >= 1 for a in r.clients.values())


@pytest.mark.parametrize(
    ("capacities", "n_stateless", "n_stateful", "spread"),
    [([3] * 5 + [2] * 9, 11, 7, Fraction(1, 3)), ([3, 1, 1, 1, 2], 28, 50, Fraction(1, 2))],
)
def test_with_capacities_that_differ_both_pools_are_counted_together_so_the_threads_stay_even(
    capacities: list[int], n_stateless: int, n_stateful: int, spread: Fraction
) -> None:
    """Choosing the stateful counts first left a client the stateless pool could not make up for (a
    client of capacity 2 with no task at all in the first shape, a client of capacity 3 at 30 while
    the small ones ran 9 or 10 in the second: max - min per thread 2/3 and 1). The totals of both
    pools are chosen first, each pool staying within its shares of each subtopology."""
    light, full = [TaskId(0, p) for p in range(n_stateless)], [TaskId(1, p) for p in range(n_stateful)]
    states = [ClientState(uuid.UUID(int=i + 1), cap) for i, cap in enumerate(capacities)]
    r = assign(light + full, states, {t: 0 for t in full}, AssignmentConfigs(), EAGER, 0, stateless=light)
    loads = [Fraction(len(r.clients[s.process_id].active), s.capacity) for s in states]
    assert max(loads) - min(loads) == spread
    for pool in (light, full):
        for s in states:
            share = Fraction(len(pool) * s.capacity, sum(capacities))
            assert math.floor(share) <= len(r.clients[s.process_id].active & set(pool)) <= math.ceil(share)


def test_with_capacities_that_differ_no_client_is_left_idle_to_round_the_standby_shares() -> None:
    """13 stateful tasks and one standby on 12 clients of 27 threads: 26 tasks, so one thread stays
    idle. Rounding the shares of all tasks by actives per capacity unit left a one-thread client with
    nothing while the others ran a task per thread (max - min 1); a three-thread client one below its
    share is as good on the total and better per thread (1/3)."""
    capacities = [3, 2, 3, 1, 3, 1, 3, 3, 2, 1, 2, 3]
    tasks = [TaskId(0, p) for p in range(13)]
    states = [ClientState(uuid.UUID(int=i + 1), cap) for i, cap in enumerate(capacities)]
    r = assign(tasks, states, {t: 0 for t in tasks}, AssignmentConfigs(num_standby_replicas=1), EAGER, 0)
    loads = [Fraction(len(r.clients[s.process_id].active) + len(r.clients[s.process_id].standby), s.capacity)
             for s in states]
    assert max(loads) - min(loads) == Fraction(1, 3)


def test_the_spare_actives_go_to_the_clients_whose_tasks_can_spread_over_the_tags() -> None:
    """Zone and rack tags on three clients: (a, x), (b, y) and (b, x). A task active on (b, x) has no
    client in another zone and on another rack, so its standby covers one of the two: the fewer tasks it
    runs, the better the spread. 44 tasks of four subtopologies (27, 8, 5, 4) leave two spare actives;
    dealing the subtopologies' floors (rather than their ceils) used to give the floor to the first
    ranked client, (a, x), so (b, x) ran 15."""
    ax, by, bx = (uuid.UUID(int=i) for i in (1, 2, 3))
    tags = {ax: ("a", "x"), by: ("b", "y"), bx: ("b", "x")}
    tasks = [TaskId(s, p) for s, size in enumerate((4, 27, 5, 8)) for p in range(size)]
    states = [ClientState(pid, tags={"zone": z, "rack": r}) for pid, (z, r) in tags.items()]
    configs = AssignmentConfigs(num_standby_replicas=1, rack_aware_assignment_tags=("zone", "rack"))
    r = assign(tasks, states, {t: 0 for t in tasks}, configs, EAGER, 0)
    assert {pid: len(a.active) for pid, a in r.clients.items()} == {ax: 15, by: 15, bx: 14}


def test_with_capacities_that_differ_the_standbys_alone_are_as_even_as_the_loads_allow() -> None:
    """9 stateful tasks, one standby, capacities 1, 1, 3 and 2. Several standby counts keep all tasks
    balanced by Kafka's criterion (no standby could move to a client that would then run fewer per
    thread than its giver); rounding the shares of all tasks by actives picked one with 2 standbys on
    a one-thread client and 1 on another (max - min per thread 1). The standbys alone come out within
    1/2 per thread, the loads no less even (max - min 1)."""
    capacities = [1, 1, 3, 2]
    tasks = [TaskId(0, p) for p in range(9)]
    states = [ClientState(uuid.UUID(int=i + 1), cap) for i, cap in enumerate(capacities)]
    r = assign(tasks, states, {t: 0 for t in tasks}, AssignmentConfigs(num_standby_replicas=1), EAGER, 0)
    standbys = [Fraction(len(r.clients[s.process_id].standby), s.capacity) for s in states]
    loads = [Fraction(len(r.clients[s.process_id].active | r.clients[s.process_id].standby), s.capacity)
             for s in states]
    assert max(standbys) - min(standbys) == Fraction(1, 2), standbys
    assert max(loads) - min(loads) == 1, loads


def test_with_capacities_that_differ_a_client_passes_the_ceil_of_its_share_where_the_standbys_even_out() -> None:
    """Random seed 227 of the quality bench: capacities 2, 3, 1, 1 and 3, 24 stateful tasks with one
    standby and 48 stateless ones. The actives (14, 22, 7, 7 and 22) leave standby counts within the
    ceils of the shares of all tasks only 1 per thread apart; a three-thread client one above its ceil
    (30 of 96 tasks on 10 threads) brings them to 2/3, as Kafka's assignor has them, its criterion
    still leaving no standby to move."""
    capacities = [2, 3, 1, 1, 3]
    tasks = [TaskId(s, p) for s, size in enumerate((24, 18, 30)) for p in range(size)]
    stateless = [t for t in tasks if t.subtopology > 0]
    states = [ClientState(uuid.UUID(int=i + 1), cap) for i, cap in enumerate(capacities)]
    end = {t: 0 for t in tasks if t.subtopology == 0}
    r = assign(tasks, states, end, AssignmentConfigs(num_standby_replicas=1), EAGER, 0, stateless=stateless)
    assert [len(r.clients[s.process_id].active) for s in states] == [14, 22, 7, 7, 22]
    standbys = [Fraction(len(r.clients[s.process_id].standby), s.capacity) for s in states]
    assert max(standbys) - min(standbys) == Fraction(2, 3), standbys


def test_a_standby_reaches_its_share_through_a_middle_client_where_no_direct_move_fits() -> None:
    """Capacities 2, 3 and 1 running 8, 12 and 4 of 24 stateful tasks, one standby each: every share
    of all tasks is 8 per thread. The group comes back with A holding 9 standbys, all of tasks B runs,
    and B 11: A is one above its share and B one below, but B can take none of A's standbys. C, at its
    share, can take one and holds one of A's tasks, which B can take: the standby goes A -> C -> B (no
    direct move did it before), and the standbys are 4 per thread everywhere."""
    a, b, c = (uuid.UUID(int=i) for i in (1, 2, 3))
    tasks = [TaskId(0, p) for p in range(24)]
    runs = {a: tasks[:8], b: tasks[8:20], c: tasks[20:]}
    holds = {a: tasks[8:17], b: tasks[:7] + tasks[20:], c: tasks[17:20] + tasks[7:8]}
    sums = {p: {**dict.fromkeys(runs[p], OFFSET_SUM_RUNNING_ACTIVE), **dict.fromkeys(holds[p], 0)} for p in runs}
    states = [
        ClientState(pid, cap, owned_active={t: 1 for t in runs[pid]}, owned_standby=frozenset(holds[pid]),
                    task_offset_sums=sums[pid])
        for pid, cap in ((a, 2), (b, 3), (c, 1))
    ]
    r = assign(tasks, states, {t: 0 for t in tasks}, AssignmentConfigs(num_standby_replicas=1), EAGER, 0)
    assert {pid: len(r.clients[pid].active) for pid in runs} == {a: 8, b: 12, c: 4}
    assert {pid: len(r.clients[pid].standby) for pid in runs} == {a: 8, b: 12, c: 4}


@pytest.mark.parametrize("sizes", [(40,), (11, 25, 4)])
def test_with_capacities_that_differ_a_large_client_runs_below_its_floor_where_the_threads_even_out(
    sizes: tuple[int, ...],
) -> None:
    """40 stateful tasks on five three-thread, two two-thread and five one-thread clients (24 threads):
    the three-thread clients' shares are exactly 5, so within floor and ceil the one-thread clients get
    9 tasks between five of them, one idling a thread (max - min per thread 1). Three-thread clients at
    4 let all five run 2, threads within 2/3, as Kafka's criterion (shouldMoveATask) allows: one below
    the floor with one subtopology, within each subtopology's floor and ceil with three (random seed
    139 of the quality bench). Nobody runs above the ceil of its share."""
    capacities = [3, 3, 3, 1, 2, 1, 3, 2, 1, 3, 1, 1]
    tasks = [TaskId(sub, p) for sub, size in enumerate(sizes) for p in range(size)]
    states = [ClientState(uuid.UUID(int=i + 1), cap) for i, cap in enumerate(capacities)]
    r = assign(tasks, states, {t: 0 for t in tasks}, AssignmentConfigs(), EAGER, 0)
    counts = [len(r.clients[s.process_id].active) for s in states]
    loads = [Fraction(q, cap) for q, cap in zip(counts, capacities, strict=True)]
    assert max(loads) - min(loads) == Fraction(2, 3), counts
    for s, cap in zip(states, capacities, strict=True):
        assert len(r.clients[s.process_id].active) <= -(-40 * cap // 24)
        for sub, size in enumerate(sizes) if len(sizes) > 1 else ():
            held = sum(1 for t in r.clients[s.process_id].active if t.subtopology == sub)
            assert size * cap // 24 <= held <= -(-size * cap // 24)


def test_a_chain_of_standby_moves_evens_out_what_no_direct_move_can_under_two_tag_keys() -> None:
    """Six clients tagged by zone and rack, one standby, a group coming back lopsided (one client ran
    six of nine tasks). Where the tag rule leaves no direct move that Kafka's criterion or the
    standbys' own evenness would make, a chain through a middle client does: the standbys come out
    within 1 per thread, not 3/2 (found by a random search over small groups)."""
    where = {1: (2, "cx", [], [2, 7]), 2: (2, "ay", [2, 3, 4, 6, 7, 8], []), 3: (2, "cy", [0, 5], [4, 6, 8]),
             4: (1, "cx", [], [0]), 5: (2, "by", [], [1, 3, 5]), 6: (2, "ax", [1], [])}
    tasks = [TaskId(0, p) for p in range(9)]
    states = [
        ClientState(
            uuid.UUID(int=i), cap, {"zone": tag[0], "rack": tag[1]}, {tasks[t]: 1 for t in runs},
            frozenset(tasks[t] for t in holds),
            {**{tasks[t]: OFFSET_SUM_RUNNING_ACTIVE for t in runs}, **{tasks[t]: 0 for t in holds}},
        )
        for i, (cap, tag, runs, holds) in where.items()
    ]
    configs = AssignmentConfigs(num_standby_replicas=1, rack_aware_assignment_tags=("zone", "rack"))
    r = assign(tasks, states, {t: 0 for t in tasks}, configs, EAGER, 0)
    standbys = [Fraction(len(r.clients[s.process_id].standby), s.capacity) for s in states]
    assert max(standbys) - min(standbys) == 1, standbys


@pytest.mark.parametrize(("capacities", "n_stateful", "stateless", "spread"), [
    ((1, 3), 46, 0, Fraction(30)), ((1, 3), 6, 73, Fraction(10, 3)), ((3, 2), 111, 17, Fraction(18)),
    ((3, 2), 66, 0, Fraction(21, 2)),
])
def test_with_a_standby_everywhere_equally_even_quotas_are_chosen_for_the_standbys(
    capacities: tuple[int, int], n_stateful: int, stateless: int, spread: Fraction
) -> None:
    """Two clients of one and three threads, one standby: each holds a replica of every stateful task,
    so each task it runs is a standby less. 46 tasks: 11 and 35 or 12 and 34 are as even per thread
    (11 vs 11 2/3, 12 vs 11 1/3); the second leaves the standbys within 30 per thread, not 31 1/3.
    Likewise 6 stateful tasks next to 73 stateless ones (random seeds 166 and 43 of the quality bench),
    and 111 next to 17 on three and two threads, where the totals fix the threads and the stateful
    counts 66 and 45 leave the standbys within 18 per thread, not 18 5/6 (seed 65). Of counts Kafka's
    criterion leaves as they are, the standbys decide before the threads: 66 tasks on three and two
    threads, 39 and 27 (threads 1/2 apart) leave the standbys within 10 1/2 per thread, 40 and 26
    (1/3) within 11 1/3 (seed 119)."""
    stateful = [TaskId(0, p) for p in range(n_stateful)]
    tasks = stateful + [TaskId(1, p) for p in range(stateless)]
    states = [ClientState(uuid.UUID(int=i + 1), cap) for i, cap in enumerate(capacities)]
    r = assign(tasks, states, {t: 0 for t in stateful}, AssignmentConfigs(num_standby_replicas=1), EAGER, 0)
    standbys = [Fraction(len(r.clients[s.process_id].standby), s.capacity) for s in states]
    assert max(standbys) - min(standbys) == spread, standbys


def _tag_deficit(
    r: AssignmentResult, tags: Mapping[uuid.UUID, tuple[str, ...]], tasks: list[TaskId], replicas: int
) -> int:
    """Per task and tag key, the values its replicas could cover but do not (the quality bench's measure)."""
    keys = len(next(iter(tags.values())))
    values = [len({v[k] for v in tags.values()}) for k in range(keys)]
    held = {t: [p for p, a in r.clients.items() if t in a.active or t in a.standby] for t in tasks}
    return sum(min(replicas, values[k]) - len({tags[p][k] for p in held[t]}) for t in tasks for k in range(keys))


def test_under_two_tag_keys_the_standbys_cover_what_they_can_and_even_out_among_equal_choices() -> None:
    """Zones d, a, c and racks z, y, x on (d, z), (a, y), (d, x) and (c, z), capacities 2, 2, 1, 3, two
    standbys; 16 tasks come back from the first three clients, each task on all three, and (c, z) joins.
    Only {(a, y), (d, x), (c, z)} covers both keys, so a task running on (d, z) misses one value
    whatever its standbys: the least deficit is 4. Kept replica by replica, a task running on (a, y)
    kept (d, z) (a new zone and rack) and then (d, x) (a new rack), where (d, x) and (c, z) cover all;
    and the standbys (d, x) held of tasks running on (d, z) could not move to (c, z), which misses as
    many values, so the one-thread (d, x) kept 14 (deficit 6, standby spread 13). Exhaustively, with
    these actives, 10 is the least spread at deficit 4; it is reached, and kept when fed back."""
    dz, ay, dx, cz = (uuid.UUID(int=i) for i in (1, 2, 3, 4))
    tags = {dz: ("d", "z"), ay: ("a", "y"), dx: ("d", "x"), cz: ("c", "z")}
    caps = {dz: 2, ay: 2, dx: 1, cz: 3}
    tasks = [TaskId(0, p) for p in range(16)]
    old = [dz, ay, dx]
    runs = {c: tasks[i::3] for i, c in enumerate(old)}
    states = [
        ClientState(c, caps[c], {"zone": tags[c][0], "rack": tags[c][1]}, {t: 1 for t in runs[c]},
                    frozenset(t for t in tasks if t not in runs[c]),
                    {t: OFFSET_SUM_RUNNING_ACTIVE if t in runs[c] else 0 for t in tasks})
        for c in old
    ]
    states.append(ClientState(cz, 3, {"zone": "c", "rack": "z"}))
    configs = AssignmentConfigs(num_standby_replicas=2, rack_aware_assignment_tags=("zone", "rack"))
    r = assign(tasks, states, {t: 0 for t in tasks}, configs, EAGER, 0)
    assert {p: len(a.active) for p, a in r.clients.items()} == {dz: 4, ay: 4, dx: 2, cz: 6}
    assert _tag_deficit(r, tags, tasks, 3) == 4
    assert {p: len(a.standby) for p, a in r.clients.items()} == {dz: 0, ay: 12, dx: 10, cz: 10}
    back = [replace(f, tags=s.tags) for f, s in zip(_fed_back(r, states, 2), states, strict=True)]
    again = assign(tasks, back, {t: 0 for t in tasks}, configs, EAGER, 0)
    assert {p: a.standby for p, a in again.clients.items()} == {p: a.standby for p, a in r.clients.items()}


def test_zones_the_tag_rule_holds_above_their_ceils_even_out_their_standbys_between_them() -> None:
    """One standby, zones a (one client, 2 threads), b (four clients, 10 threads) and c (one client, 3
    threads): the standbys of the ten tasks running in zone b must go to a or c, both above the ceils
    of their shares. Moving a standby from a to c kept c within its ceil only if it was there before,
    so a held 5 (5/2 per thread) next to c's 5 (5/3); shifting the excess between them leaves both at 2
    per thread."""
    where = [(2, "a"), (3, "b"), (3, "b"), (3, "b"), (3, "c"), (1, "b")]
    tasks = [TaskId(0, p) for p in range(16)]
    states = [ClientState(uuid.UUID(int=i + 1), cap, {"zone": z}) for i, (cap, z) in enumerate(where)]
    configs = AssignmentConfigs(num_standby_replicas=1, rack_aware_assignment_tags=("zone",))
    r = assign(tasks, states, {t: 0 for t in tasks}, configs, EAGER, 0)
    assert [len(r.clients[s.process_id].active) for s in states] == [2, 3, 3, 3, 4, 1]
    standbys = [Fraction(len(r.clients[s.process_id].standby), s.capacity) for s in states]
    assert [len(r.clients[s.process_id].standby) for s in states] == [4, 2, 2, 2, 6, 0]
    assert max(standbys) - min(standbys) == 2, standbys


def test_two_replicas_of_a_task_move_at_once_where_neither_can_alone_under_two_tag_keys() -> None:
    """Zones a, b, c and racks y, x, z: (a, y) 3 threads, (a, x), (b, x), (b, z), (c, z) 1 thread, (c, x);
    two standbys, 16 tasks. A task running on (a, y) with standbys on (b, x) and (c, z) covers every
    value; moving either standby alone repeats a rack, but (b, z) and (c, x) together cover them as
    well. Single moves left the one-thread (c, z) with 6 standbys and the standbys 6 per thread
    apart; trading racks in pairs brings them within 4, the least spread any placement with these
    actives reaches at the least tag deficit (2), by exhaustive search. Fed back, nothing changes."""
    where = [(3, "a", "y"), (2, "a", "x"), (2, "b", "x"), (2, "b", "z"), (1, "c", "z"), (2, "c", "x")]
    tags = {uuid.UUID(int=i + 1): (z, r) for i, (_, z, r) in enumerate(where)}
    tasks = [TaskId(0, p) for p in range(16)]
    states = [ClientState(pid, cap, {"zone": z, "rack": r}) for pid, (cap, z, r) in zip(tags, where, strict=True)]
    configs = AssignmentConfigs(num_standby_replicas=2, rack_aware_assignment_tags=("zone", "rack"))
    r = assign(tasks, states, {t: 0 for t in tasks}, configs, EAGER, 0)
    assert [len(r.clients[p].active) for p in tags] == [4, 2, 3, 3, 1, 3]
    assert _tag_deficit(r, tags, tasks, 3) == 2
    standbys = [Fraction(len(r.clients[s.process_id].standby), s.capacity) for s in states]
    assert max(standbys) - min(standbys) == 4, standbys
    back = [replace(f, tags=s.tags) for f, s in zip(_fed_back(r, states, 2), states, strict=True)]
    assert assign(tasks, back, {t: 0 for t in tasks}, configs, EAGER, 0).clients == r.clients


@pytest.mark.parametrize("keys", [("zone",), ("zone", "rack")])
def test_with_a_standby_everywhere_rack_tags_leave_the_quotas_chosen_for_the_standbys(keys: tuple[str, ...]) -> None:
    """As above with rack tags: with as many standbys as clients but one, every client still holds a
    replica of every task (the tags only order them), so of the equally even quotas the one with the
    standbys most even is chosen: one and three threads, 46 tasks, standbys within 30 per thread, not
    31 1/3 (random seeds 30 and 39 of the quality bench, two clients left)."""
    tasks = [TaskId(0, p) for p in range(46)]
    tags = [{"zone": "a", "rack": "x"}, {"zone": "b", "rack": "y"}]
    states = [ClientState(uuid.UUID(int=i + 1), cap, {k: tags[i][k] for k in keys}) for i, cap in enumerate((1, 3))]
    configs = AssignmentConfigs(num_standby_replicas=2, rack_aware_assignment_tags=keys)
    r = assign(tasks, states, {t: 0 for t in tasks}, configs, EAGER, 0)
    standbys = [Fraction(len(r.clients[s.process_id].standby), s.capacity) for s in states]
    assert max(standbys) - min(standbys) == 30, standbys


def test_standbys_are_planned_around_where_the_moving_actives_end_up() -> None:
    """A ran all three tasks alone; B and C join with no state. Two tasks move to them once warmed up.
    Planned around where the tasks run meanwhile (all on A), the standbys would be balanced again after
    the moves, needing another warm-up and probing round; planned around where they end up, the round
    after the moves keeps them (a moving task's replica sits on its target meanwhile, a free warm-up)."""
    end = {t: 100_000 for t in T[:3]}
    configs = AssignmentConfigs(num_standby_replicas=1, max_warmup_replicas=3)
    first = assign(T[:3], [running(A, T[:3]), ClientState(B), ClientState(C)], end, configs, EAGER, 0)
    assert first.clients[A].active == set(T[:3]) and first.probing_rebalance_at_ms is not None
    warmed = [
        ClientState(pid, owned_active={t: 1 for t in a.active}, owned_standby=a.standby,
                    task_offset_sums={**{t: end[t] for t in a.standby},
                                      **{t: OFFSET_SUM_RUNNING_ACTIVE for t in a.active}})
        for pid, a in first.clients.items()
    ]
    second = assign(T[:3], warmed, end, configs, EAGER, 0)
    assert [len(a.active) for a in second.clients.values()] == [1, 1, 1]
    assert second.probing_rebalance_at_ms is None, "no standby waits for a warm-up after the moves"
    moved = {t for pid in (B, C) for t in second.clients[pid].active}
    for t in moved:  # each moving task's standby sat on its target and is kept by A, which ran it
        assert any(t in first.clients[pid].standby for pid in (B, C))


def test_while_stateful_tasks_wait_for_warm_ups_the_stateless_ones_even_out_the_threads_at_once() -> None:
    """A runs six stateful tasks and B six stateless ones of one subtopology; C joins with no state.
    Four stateful tasks move to B and C once warmed up, meanwhile A runs them. This round the
    stateless tasks fill up the least loaded clients whatever their subtopology shares (they move at
    no cost): B and C run three each, A none, the threads three apart instead of six (A eight, B and
    C their two each)."""
    stateful = [TaskId(0, p) for p in range(6)]
    stateless = [TaskId(1, p) for p in range(6)]
    end = {t: 100_000 for t in stateful}
    configs = AssignmentConfigs(num_standby_replicas=1, max_warmup_replicas=4)
    states = [running(A, stateful), running(B, stateless), ClientState(C)]
    first = assign([*stateful, *stateless], states, end, configs, EAGER, 0, stateless=stateless)
    assert first.clients[A].active == set(stateful) and first.probing_rebalance_at_ms is not None
    assert [len(first.clients[pid].active) for pid in (B, C)] == [3, 3]


def test_a_task_goes_to_the_holder_that_warmed_up_for_it_when_another_could_take_its_room() -> None:
    """A runs six tasks, B and C take two each once warmed up; round one planned B for 0_2 and 0_4, C
    for 0_3 and 0_5, and each holds a replica of its two (some in the slot of a standby). B holds
    caught-up replicas of 0_3 as well, C of 0_2. Taken in fill order, 0_2 and 0_3 both went to B (the
    first caught-up holder with room) and 0_4 to C, which had to warm up for it again; as many tasks as
    the room allows go to caught-up holders, so all four move now and nothing waits."""
    tasks = [TaskId(0, p) for p in range(6)]
    end = {t: 100_000 for t in tasks}
    configs = AssignmentConfigs(num_standby_replicas=1, max_warmup_replicas=4)
    held = {B: [0, 2, 3, 4], C: [1, 2, 3, 5]}
    states = [running(A, tasks)] + [
        ClientState(pid, owned_standby=frozenset(tasks[p] for p in ps),
                    task_offset_sums={tasks[p]: end[tasks[p]] for p in ps})
        for pid, ps in held.items()
    ]
    r = assign(tasks, states, end, configs, EAGER, 0)
    assert [len(r.clients[pid].active) for pid in (A, B, C)] == [2, 2, 2]
    assert r.probing_rebalance_at_ms is None, "every move went to a caught-up client"


def test_stateless_tasks_go_around_the_standbys_among_equally_loaded_clients() -> None:
    """A runs the stateful task, B holds its caught-up standby; six stateless tasks on four equal
    clients: two of B, C and D run a second one. Given to B (first by process id), B would run two
    tasks and hold a standby while D runs one, and balance would move the standby to D, which must
    warm up first (a probing round); given to C and D, B keeps its standby and nothing waits."""
    s0, light = TaskId(0, 0), [TaskId(1, p) for p in range(6)]
    states = [
        running(A, [s0]),
        ClientState(B, owned_standby=frozenset({s0}), task_offset_sums={s0: 100_000}),
        ClientState(C),
        ClientState(D),
    ]
    r = assign([s0, *light], states, {s0: 100_000}, AssignmentConfigs(num_standby_replicas=1), EAGER, 0,
               stateless=light)
    assert r.clients[B].standby == {s0} and len(r.clients[B].active) == 1
    assert [len(r.clients[pid].active) for pid in (A, C, D)] == [2, 2, 2]
    assert r.probing_rebalance_at_ms is None


def test_a_moving_task_warms_up_in_the_slot_of_a_second_caught_up_standby() -> None:
    """A runs eight tasks, B and C hold both standbys of each, caught up; D joins with no state and
    max.warmup.replicas is 1. D's two tasks keep their standbys on B and C in the plan, so D takes the
    slot of one of them meanwhile (the other stays caught up): both move in the next round, not one
    warm-up at a time."""
    tasks = [TaskId(0, p) for p in range(8)]
    end = {t: 100_000 for t in tasks}
    configs = AssignmentConfigs(num_standby_replicas=2, max_warmup_replicas=1)
    states = [running(A, tasks)] + [
        ClientState(pid, owned_standby=frozenset(tasks), task_offset_sums=dict(end)) for pid in (B, C)
    ] + [ClientState(D)]
    first = assign(tasks, states, end, configs, EAGER, 0)
    assert not first.clients[D].active and first.probing_rebalance_at_ms is not None
    warmed = [
        ClientState(pid, owned_active={t: 2 for t in a.active}, owned_standby=a.standby,
                    task_offset_sums={**{t: end[t] for t in a.standby},
                                      **{t: OFFSET_SUM_RUNNING_ACTIVE for t in a.active}})
        for pid, a in first.clients.items()
    ]
    second = assign(tasks, warmed, end, configs, EAGER, 0)
    assert [len(a.active) for a in second.clients.values()] == [2, 2, 2, 2]
    assert second.probing_rebalance_at_ms is None


def test_with_nobody_caught_up_a_task_nobody_owns_stays_with_the_least_lag_where_the_quotas_allow() -> None:
    """A group restarts on old state: nobody owns a task, nobody is caught up. Z has the least lag on
    T0, Y on T1, X (first by process id) none. The task runs on the least lag either way; were its
    target X, X would warm up T0 in vain: in the next round Z owns T0 and keeps it."""
    x, y, z = (uuid.UUID(int=i) for i in (1, 2, 3))
    end = {T[0]: 100_000, T[1]: 100_000}
    states = [
        ClientState(x),
        ClientState(y, task_offset_sums={T[1]: 60_000}),
        ClientState(z, task_offset_sums={T[0]: 60_000}),
    ]
    r = assign(T[:2], states, end, AssignmentConfigs(), EAGER, 0)
    assert r.clients[z].active == {T[0]} and r.clients[y].active == {T[1]}
    assert not any(a.warmup for a in r.clients.values()) and r.probing_rebalance_at_ms is None


def test_with_capacities_that_differ_the_actives_leave_the_standbys_room_to_even_out() -> None:
    """Random seed 169 of the quality bench: 7 stateful tasks, one standby, capacities 1, 1 and 3. The
    actives most even per thread (1, 1 and 5) leave the three-thread client room for only 2 standbys,
    so the one-thread clients hold 5 between them: 7/3 per thread apart. 2, 1 and 4, which Kafka's
    criterion leaves as they are too (the threads 1 apart, as Kafka's assignor has them), let the
    standbys lie 1 apart. Fed back, the assignment stays."""
    capacities = [1, 1, 3]
    tasks = [TaskId(0, p) for p in range(7)]
    states = [ClientState(uuid.UUID(int=i + 1), cap) for i, cap in enumerate(capacities)]
    configs = AssignmentConfigs(num_standby_replicas=1)
    r = assign(tasks, states, {t: 0 for t in tasks}, configs, EAGER, 0)
    standbys = [Fraction(len(r.clients[s.process_id].standby), s.capacity) for s in states]
    assert max(standbys) - min(standbys) == 1, standbys
    assert sorted(len(r.clients[s.process_id].active) for s in states[:2]) == [1, 2]
    fed = [
        replace(s, owned_active={t: 1 for t in r.clients[s.process_id].active},
                owned_standby=r.clients[s.process_id].standby,
                task_offset_sums={**{t: 0 for t in r.clients[s.process_id].standby},
                                  **{t: OFFSET_SUM_RUNNING_ACTIVE for t in r.clients[s.process_id].active}})
        for s in states
    ]
    again = assign(tasks, fed, {t: 0 for t in tasks}, configs, EAGER, 1)
    assert {p: (a.active, a.standby) for p, a in again.clients.items()} == {
        p: (a.active, a.standby) for p, a in r.clients.items()}


def test_with_capacities_that_differ_stateless_owners_keep_their_tasks_where_the_threads_are_as_even() -> None:
    """Random seed 164 of the quality bench: three stateless tasks run on a three-thread client and two
    two-thread ones; a second three-thread client joins. Filled least loaded first, it took a task
    from a two-thread client, the threads 1/2 apart either way (the one-thread clients run none); the
    owners keep their tasks."""
    tasks = [TaskId(0, p) for p in range(3)]
    a, b, c, d, e = (uuid.UUID(int=i + 1) for i in range(5))
    states = [
        running(a, [tasks[0]], capacity=3), running(b, [tasks[1]], capacity=2),
        running(c, [tasks[2]], capacity=2), ClientState(d, 3), ClientState(e, 1),
    ]
    r = assign(tasks, states, {}, AssignmentConfigs(), EAGER, 0)
    assert [sorted(r.clients[p].active) for p in (a, b, c, d, e)] == [[tasks[0]], [tasks[1]], [tasks[2]], [], []]


def test_the_actives_leave_the_standbys_room_only_within_kafkas_tolerance_for_the_threads() -> None:
    """Random seed 249 of the quality bench: 9 stateful tasks, two standbys, capacities 1, 2, 1 and 1
    in zones a, d, c and c (the first two hold every task). 2, 4, 1 and 2 would let the standbys lie
    1/2 closer than 2, 3, 2 and 2, but put the threads 1 apart, where Kafka's own balancing leaves
    them 1/2 apart: the threads stay as even as that."""
    tasks = [TaskId(0, p) for p in range(9)]
    states = [ClientState(uuid.UUID(int=i + 1), cap, tags={"zone": z})
              for i, (cap, z) in enumerate([(1, "a"), (2, "d"), (1, "c"), (1, "c")])]
    configs = AssignmentConfigs(num_standby_replicas=2, rack_aware_assignment_tags=("zone",))
    r = assign(tasks, states, {t: 0 for t in tasks}, configs, EAGER, 0)
    assert [len(r.clients[s.process_id].active) for s in states] == [2, 3, 2, 2]


def test_kafkas_counts_and_the_standbys_room_on_the_quality_bench_seeds() -> None:
    """The counts Kafka's round robin and balanceTasksOverThreads reach (seeds 169 and 249), and the
    standby spread the actives leave room for (seed 169: 1, 1 and 5 leave the three-thread client
    room for 2 of the 7 standbys)."""
    assert kafka_counts(7, [1, 1, 3]) == [2, 2, 3]
    assert kafka_counts(9, [1, 2, 1, 1]) == [2, 3, 2, 2]
    assert kafka_counts(0, [1, 3], stateless=4) == [1, 3]
    room = StandbyRoom((False, False, False), 2)
    assert room.spread([1, 1, 5], [1, 1, 3]) == Fraction(7, 3)
    assert room.spread([2, 1, 4], [1, 1, 3]) == 1
    assert StandbyRoom((True, False), 2).spread([0, 3], [1, 1]) == 3  # the first holds all 3 it does not run
