"""Property tests over thousands of generated groups: every round satisfies the invariants of
harness.check_invariants, the output does not depend on input order, and an unchanged group gets the
same assignment again."""

from __future__ import annotations

import random
import uuid

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streams_rt.assignment import AssignmentConfigs, ClientState, RebalanceProtocol, assign
from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, OFFSET_SUM_UNKNOWN, TaskId

from .harness import check_invariants

# A drawn group: tasks, clients, end offsets, configs, protocol, stateless tasks.
Group = tuple[list[TaskId], list[ClientState], dict[TaskId, int], AssignmentConfigs, RebalanceProtocol, set[TaskId]]
# A drawn steady group: tasks, stateless tasks, each client's (capacity, tags), configs, protocol.
SteadyGroup = tuple[
    list[TaskId], set[TaskId], dict[uuid.UUID, tuple[int, dict[str, str]]], AssignmentConfigs, RebalanceProtocol
]

SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def groups(draw: st.DrawFn) -> Group:
    n_sub = draw(st.integers(1, 3))
    tasks = [TaskId(s, p) for s in range(n_sub) for p in range(draw(st.integers(1, 8)))]
    n_clients = draw(st.integers(1, 8))
    pids = [uuid.UUID(int=draw(st.integers(0, 2**128 - 1))) for _ in range(n_clients)]
    pids = list(dict.fromkeys(pids))
    tag_keys = draw(st.sampled_from([(), ("zone",), ("zone", "rack")]))
    stateless = set(draw(st.lists(st.sampled_from(tasks), max_size=3)))
    end = {t: draw(st.sampled_from([0, 5_000, 50_000])) for t in tasks if t not in stateless}
    clients = []
    gens: dict[TaskId, int] = {}
    for pid in pids:
        owned, sums, standby = {}, {}, set()
        for t in tasks:
            kind = draw(st.sampled_from(["none", "none", "active", "standby", "state"]))
            if kind == "active":
                owned[t] = draw(st.integers(1, 4))
                gens[t] = max(gens.get(t, 0), owned[t])
                sums[t] = OFFSET_SUM_RUNNING_ACTIVE
            elif kind == "standby":
                standby.add(t)
                sums[t] = draw(st.sampled_from([0, 45_000, 50_000, OFFSET_SUM_UNKNOWN]))
            elif kind == "state":
                sums[t] = draw(st.integers(0, 60_000))
        clients.append(
            ClientState(
                pid,
                capacity=draw(st.integers(1, 3)),
                tags={k: draw(st.sampled_from("ab")) for k in tag_keys},
                owned_active=owned,
                owned_standby=frozenset(standby),
                task_offset_sums=sums,
            )
        )
    configs = AssignmentConfigs(
        num_standby_replicas=draw(st.integers(0, 3)),
        max_warmup_replicas=draw(st.integers(1, 3)),
        rack_aware_assignment_tags=tag_keys,
    )
    protocol = draw(st.sampled_from(list(RebalanceProtocol)))
    return tasks, clients, end, configs, protocol, stateless


def _one_standby_zone_short() -> Group:
    """Two standbys over two zones, capacities that differ: clients (capacity, zone) 1b 2a 3a 3a 3b 1a 1a 1a,
    nothing owned, the first of four tasks stateless. The standby shares let the three-thread clients pass
    the ceils of their shares to keep the one-thread clients free, but zone b's one-thread client must
    hold a replica anyway: the standbys are no more even for it, and a three-thread client ended with 3
    tasks against a ceil of 2 while three one-thread clients held none."""
    tasks = [TaskId(0, p) for p in range(4)]
    shape = [(1, "b"), (2, "a"), (3, "a"), (3, "a"), (3, "b"), (1, "a"), (1, "a"), (1, "a")]
    clients = [ClientState(uuid.UUID(int=i), cap, tags={"zone": zone}) for i, (cap, zone) in enumerate(shape)]
    configs = AssignmentConfigs(num_standby_replicas=2, rack_aware_assignment_tags=("zone",))
    return tasks, clients, {t: 0 for t in tasks[1:]}, configs, RebalanceProtocol.EAGER, {tasks[0]}


@SETTINGS
@given(groups(), st.randoms(use_true_random=False))
@example(_one_standby_zone_short(), random.Random(0))
def test_every_round_satisfies_invariants_and_is_order_independent(group: Group, rnd: random.Random) -> None:
    tasks, clients, end, configs, protocol, stateless = group
    result = assign(tasks, clients, end, configs, protocol, 1_000, stateless=stateless)
    check_invariants(tasks, clients, end, configs, protocol, result)
    shuffled_tasks, shuffled_clients = list(tasks), list(clients)
    rnd.shuffle(shuffled_tasks)
    rnd.shuffle(shuffled_clients)
    again = assign(
        shuffled_tasks, shuffled_clients, dict(reversed(list(end.items()))), configs, protocol, 1_000,
        stateless=stateless,
    )
    assert again == result


@st.composite
def steady_groups(draw: st.DrawFn) -> SteadyGroup:
    """Groups with every lag 0, some stateless tasks and rack tags, whose fresh assignment is fed back:
    the assignor must then be a fixpoint (a stable assignment reshuffles nothing, standbys included)."""
    tasks = [TaskId(s, p) for s in range(draw(st.integers(1, 4))) for p in range(draw(st.integers(1, 10)))]
    stateless = set(draw(st.lists(st.sampled_from(tasks), max_size=len(tasks) // 3)))
    n = draw(st.integers(1, 10))
    pids = list(dict.fromkeys(uuid.UUID(int=draw(st.integers(0, 2**64))) for _ in range(n)))
    tag_keys = draw(st.sampled_from([(), ("zone",), ("zone", "rack")]))
    clients = {
        pid: (draw(st.integers(1, 4)), {k: draw(st.sampled_from("abc")) for k in tag_keys}) for pid in pids
    }
    configs = AssignmentConfigs(num_standby_replicas=draw(st.integers(0, 2)), rack_aware_assignment_tags=tag_keys)
    return tasks, stateless, clients, configs, draw(st.sampled_from(list(RebalanceProtocol)))


@SETTINGS
@given(steady_groups())
def test_unchanged_group_gets_the_same_assignment(group: SteadyGroup) -> None:
    tasks, stateless, clients, configs, protocol = group
    end = {t: 0 for t in tasks if t not in stateless}
    fresh = [ClientState(p, c, tags=tags) for p, (c, tags) in clients.items()]
    first = assign(tasks, fresh, end, configs, protocol, 0, stateless=stateless)
    assert not first.followup_rebalance and first.probing_rebalance_at_ms is None
    fed_back = [
        ClientState(
            p,
            c,
            tags=tags,
            owned_active={t: 1 for t in first.clients[p].active},
            owned_standby=first.clients[p].standby,
            task_offset_sums={t: 0 for t in first.clients[p].standby},
        )
        for p, (c, tags) in clients.items()
    ]
    second = assign(tasks, fed_back, end, configs, protocol, 0, stateless=stateless)
    assert second == first
