"""A simulated group for the assignor tests: clients that apply each assignment, keep their state
directories, catch up their standbys between rounds, and report back like Kafka Streams members; a
client that leaves can come back later with the claims and state directory it left with, as in Kafka's
TaskAssignorConvergenceTest. The group keeps a history of events and rounds, appended to every failure.
Also the invariant checks every round must pass, computed independently of the assignor's code."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from streams_rt.assignment import (
    AssignmentConfigs,
    AssignmentResult,
    ClientState,
    RebalanceProtocol,
    assign,
)
from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, TaskId


@dataclass
class SimClient:
    process_id: uuid.UUID
    capacity: int = 1
    tags: dict[str, str] = field(default_factory=dict)
    active: dict[TaskId, int] = field(default_factory=dict)
    standby: set[TaskId] = field(default_factory=set)
    offsets: dict[TaskId, int] = field(default_factory=dict)  # state directories on disk

    def subscription(self) -> ClientState:
        sums = dict(self.offsets)
        for task in self.active:
            sums[task] = OFFSET_SUM_RUNNING_ACTIVE
        return ClientState(
            self.process_id,
            self.capacity,
            tags=dict(self.tags),
            owned_active=dict(self.active),
            owned_standby=frozenset(self.standby),
            task_offset_sums=sums,
        )


class Group:
    """A group of simulated clients. `lag_per_round` is how far the changelogs advance each round: 0
    keeps every lag 0 (everyone caught up); a large value makes state left behind fall out of date."""

    def __init__(
        self,
        tasks: list[TaskId],
        configs: AssignmentConfigs,
        protocol: RebalanceProtocol,
        rng: random.Random,
        lag_per_round: int = 0,
    ) -> None:
        self.tasks = tasks
        self.configs = configs
        self.protocol = protocol
        self.rng = rng
        self.lag_per_round = lag_per_round
        self.end = {t: 0 for t in tasks}
        self.clients: dict[uuid.UUID, SimClient] = {}
        self.dropped: dict[uuid.UUID, SimClient] = {}
        self.generation = 0
        self.now = 0
        self.history: list[str] = [
            f"{len(tasks)} tasks {_tasks(tasks)}, {configs}, {protocol.name}, changelogs grow {lag_per_round}/round"
        ]

    def add_client(self, capacity: int = 1, tags: dict[str, str] | None = None) -> uuid.UUID:
        pid = uuid.UUID(int=self.rng.getrandbits(128))
        self.clients[pid] = SimClient(pid, capacity, tags or {})
        self.history.append(f"add {_short(pid)} capacity {capacity} tags {tags or {}}")
        return pid

    def drop_client(self, pid: uuid.UUID) -> None:
        """The client leaves (a crash: no revocation); it keeps its claims and state directory."""
        self.dropped[pid] = self.clients.pop(pid)
        self.history.append(f"drop {_short(pid)}")

    def resurrect_client(self, pid: uuid.UUID) -> None:
        """A dropped client comes back with the claims (of its old generation) and the state directory
        it left with: its claims are stale and its state has fallen behind meanwhile."""
        self.clients[pid] = self.dropped.pop(pid)
        self.history.append(f"resurrect {_short(pid)}")

    def stale_claims(self) -> bool:
        """Does a client claim an active task another client owns with a newer generation (KIP-341)?"""
        owners = valid_owners([c.subscription() for c in self.clients.values()])
        return any(owners[t] != pid for pid, c in self.clients.items() for t in c.active)

    def failure(self, message: str) -> AssertionError:
        """An AssertionError carrying the group's history, to raise."""
        return AssertionError(message + "\nhistory:\n  " + "\n  ".join(self.history))

    def subscriptions(self) -> list[ClientState]:
        subs = [c.subscription() for c in self.clients.values()]
        self.rng.shuffle(subs)
        return subs

    def round(self) -> AssignmentResult:
        subs = self.subscriptions()
        result = assign(self.tasks, subs, dict(self.end), self.configs, self.protocol, self.now)
        self._record(result)
        try:
            check_invariants(self.tasks, subs, self.end, self.configs, self.protocol, result)
        except AssertionError as e:
            raise self.failure(f"round {self.generation + 1}: {e}") from None
        self.apply(result)
        return result

    def _record(self, result: AssignmentResult) -> None:
        self.history.append(
            f"round {self.generation + 1}: followup={result.followup_rebalance} "
            f"probing_at={result.probing_rebalance_at_ms}"
        )
        for pid in sorted(self.clients):
            a, c = result.clients[pid], self.clients[pid]
            self.history.append(
                f"  {_short(pid)} cap {c.capacity} {c.tags}: active {_tasks(a.active)} standby "
                f"{_tasks(a.standby - a.warmup)} warmup {_tasks(a.warmup)} revoke {_tasks(a.revoke)}"
            )

    def apply(self, result: AssignmentResult) -> None:
        self.generation += 1
        self.now += self.configs.probing_rebalance_interval_ms
        for t in self.end:
            self.end[t] += self.lag_per_round
        for pid, client in self.clients.items():
            got = result.clients[pid]
            if self.protocol is RebalanceProtocol.EAGER:
                kept = {}
            else:
                kept = {t: g for t, g in client.active.items() if t not in got.revoke}
            for task in set(client.active) - set(kept):  # closed: checkpoint written at close
                client.offsets[task] = self.end[task] - self.lag_per_round
            client.active = {t: self.generation for t in got.active}
            # Active tasks keep up; standbys and warm-ups catch up by the next (probing) round.
            client.standby = set(got.standby)
            for task in got.active | got.standby:
                client.offsets[task] = self.end[task]


def _short(pid: uuid.UUID) -> str:
    return str(pid)[:8]


def _tasks(tasks: Iterable[TaskId]) -> str:
    return "[" + " ".join(f"{t.subtopology}_{t.partition}" for t in sorted(tasks)) + "]"


def valid_owners(subs: list[ClientState]) -> dict[TaskId, uuid.UUID]:
    """KIP-341, computed independently: highest generation wins, ties to the lowest process id."""
    best: dict[TaskId, tuple[int, uuid.UUID]] = {}
    for s in subs:
        for task, gen in s.owned_active.items():
            cur = best.get(task)
            if cur is None or gen > cur[0] or (gen == cur[0] and s.process_id < cur[1]):
                best[task] = (gen, s.process_id)
    return {t: pid for t, (gen, pid) in best.items()}


def lag(sub: ClientState, task: TaskId, end: int, owner: uuid.UUID | None) -> int:
    """Kafka's lag, -2 for the running owner; state of unknown freshness and state ahead of the
    changelog's end count as nothing (lag = end)."""
    if owner == sub.process_id:
        return -2
    offset = sub.task_offset_sums.get(task, 0)
    return end - offset if 0 <= offset <= end else end


def caught_up(sub: ClientState, task: TaskId, end: int, acceptable: int, owner: uuid.UUID | None) -> bool:
    if owner == sub.process_id:
        return True
    offset = sub.task_offset_sums.get(task, 0)
    return offset >= 0 and lag(sub, task, end, owner) <= acceptable


def check_invariants(
    tasks: list[TaskId],
    subs: list[ClientState],
    end: dict[TaskId, int],
    configs: AssignmentConfigs,
    protocol: RebalanceProtocol,
    result: AssignmentResult,
) -> None:
    by_pid = {s.process_id: s for s in subs}
    assert set(result.clients) == set(by_pid)
    owners = valid_owners(subs)
    active_count: Counter[TaskId] = Counter()
    revoked: set[TaskId] = set()
    warmups = 0
    for pid, a in result.clients.items():
        active_count.update(a.active)
        revoked |= a.revoke
        warmups += len(a.warmup)
        assert not (a.active & a.standby), f"{pid}: active and standby overlap {a.active & a.standby}"
        assert a.warmup <= a.standby
        assert not (a.active & a.revoke)
        assert a.active <= set(tasks)
        if protocol is RebalanceProtocol.EAGER:
            assert not a.revoke
        else:  # an owned task that is not kept must be revoked explicitly
            lost = {t for t, o in owners.items() if o == pid} - a.active
            assert lost <= a.revoke, f"{pid} loses {lost - a.revoke} without being told to revoke"
        # Never hand a task to a new owner while another member still owns it (KIP-429).
        for t in a.active:
            assert owners.get(t, pid) == pid or protocol is RebalanceProtocol.EAGER, (
                f"{t} given to {pid} while {owners[t]} still owns it"
            )
        # Actives only on caught-up clients; when nobody is caught up, on a client with the least lag.
        for t in a.active:
            acceptable = configs.acceptable_recovery_lag
            if t in end and not caught_up(by_pid[pid], t, end[t], acceptable, owners.get(t)):
                assert not any(
                    caught_up(s, t, end[t], acceptable, owners.get(t)) for s in subs
                ), f"{t} on {pid}, which is not caught up, while another client is"
                least = min(lag(s, t, end[t], owners.get(t)) for s in subs)
                here = lag(by_pid[pid], t, end[t], owners.get(t))
                assert here == least, f"nobody is caught up on {t}: on {pid} with lag {here}, least is {least}"
    assert all(n == 1 for n in active_count.values()), "a task has two active owners"
    for t in tasks:
        if active_count[t] == 0:
            assert protocol is RebalanceProtocol.COOPERATIVE and t in revoked, f"{t} unassigned"
            assert result.followup_rebalance
    assert warmups <= configs.max_warmup_replicas
    # Standbys: exactly min(k, clients - 1) distinct non-warm-up replicas per stateful task.
    want = min(configs.num_standby_replicas, len(subs) - 1)
    replicas: Counter[TaskId] = Counter()
    for a in result.clients.values():
        replicas.update(a.standby - a.warmup)
    for t in tasks:
        if t in end:  # a task withheld for hand-off is also a standby on its next owner
            expected = want + 1 if active_count[t] == 0 else want
            assert replicas[t] == expected, f"{t} has {replicas[t]} standbys, want {expected}"
    # A task keeps a caught-up standby (or warm-up) whenever a client other than the one running it
    # (or revoking it) is caught up: balancing waits for a warm-up rather than lose it.
    if want:
        runner = {t: pid for pid, a in result.clients.items() for t in a.active}
        acceptable = configs.acceptable_recovery_lag
        for t in end:
            on = runner.get(t, owners.get(t))
            hot = [s.process_id for s in subs
                   if s.process_id != on and caught_up(s, t, end[t], acceptable, owners.get(t))]
            holders = [pid for pid, a in result.clients.items() if t in a.standby]
            if hot:
                assert any(p in hot for p in holders), \
                    f"{t}: no caught-up standby on {holders}, though {hot} are caught up"
    settled = not result.followup_rebalance and result.probing_rebalance_at_ms is None
    # Tag spread: once nothing waits, with one tag key, a task's active and standbys use as many
    # distinct values as they can (each replica in an unused zone while one is left).
    keys = configs.rack_aware_assignment_tags
    if settled and want and len(keys) == 1:
        zones = {s.tags.get(keys[0]) for s in subs}
        for t in end:
            placed = [pid for pid, a in result.clients.items() if t in a.active or t in a.standby - a.warmup]
            used = {by_pid[pid].tags.get(keys[0]) for pid in placed}
            assert len(used) == min(len(placed), len(zones)), f"{t} on {placed} uses zones {used} of {zones}"
    # With several keys: no replica sits where the tag rule rejects it, given the task's other
    # replicas, while a client the rule accepts holds nothing of the task.
    if settled and want and len(keys) > 1:
        accepts = _tag_rule(subs, keys)
        for t in end:
            runs = [pid for pid, a in result.clients.items() if t in a.active]
            holding = [pid for pid, a in result.clients.items() if t in a.standby - a.warmup]
            free = [pid for pid in by_pid if pid not in runs and pid not in holding]
            for d in holding:
                others = runs + [r for r in holding if r != d]
                if not accepts(others, d):
                    better = [c for c in free if accepts(others, c)]
                    assert not better, f"{t}: replica on {d} breaks the tag rule while {better} would not"
    # Balance, once nothing waits for a warm-up or a revocation.
    if settled:
        check_balance(tasks, subs, end, result)
        # With several tag keys the rule depends on the order replicas are taken in, and the assignor
        # also refuses moves its next round's sticky pass would undo: balance is best effort there.
        if want and len(configs.rack_aware_assignment_tags) <= 1:
            check_standby_balance(subs, end, configs, result)


def _tag_rule(subs: list[ClientState], keys: tuple[str, ...]) -> Callable[[list[uuid.UUID], uuid.UUID], bool]:
    """rack.aware.assignment.tags: may `pid` hold a replica next to `others`? Each of its tag values
    must be unused among them, unless they use every value of that key already."""
    values = {s.process_id: tuple(s.tags.get(k) for k in keys) for s in subs}
    distinct = [len({v[i] for v in values.values()}) for i in range(len(keys))]

    def accepts(others: list[uuid.UUID], pid: uuid.UUID) -> bool:
        return all(
            values[pid][i] not in {values[o][i] for o in others} or len({values[o][i] for o in others}) >= distinct[i]
            for i in range(len(keys))
        )

    return accepts


def check_standby_balance(
    subs: list[ClientState], end: dict[TaskId, int], configs: AssignmentConfigs, result: AssignmentResult
) -> None:
    """No standby could move from a client above the ceil of its share of all tasks (actives and
    standbys, by capacity) to one below it, nor from a client above its rounded share to one below it,
    nor to a client whose load per capacity unit, with it, would stay at or below the giver's without
    it (Kafka's criterion, shouldMoveATask in balanceTasksOverThreads; with equal capacities the same as
    "below the giver's with it"), where the taker runs nothing of the task and the tag rule allows it
    (the first two only to a taker that would not rise above the giver's load per capacity unit). The
    rounded shares, with equal capacities: floors, and the leftover ceils to the clients with the most
    actives per capacity unit, then by process id (with capacities that differ the shares are chosen
    for the standbys' spread, standby_shares.py, so only the ceils and Kafka's criterion are checked,
    and the ceils only where the move would not widen the standbys' spread per capacity unit: the
    shares pass a ceil where that evens the standbys)."""
    cap = {s.process_id: s.capacity for s in subs}
    total_cap = sum(cap.values())
    replicas = {pid: a.standby - a.warmup for pid, a in result.clients.items()}
    load = {pid: len(a.active) + len(replicas[pid]) for pid, a in result.clients.items()}
    everything = sum(load.values())
    rounded = {pid: everything * c // total_cap for pid, c in cap.items()}
    fractional = sorted(
        (pid for pid, c in cap.items() if everything * c % total_cap),
        key=lambda pid: (-len(result.clients[pid].active) / cap[pid], pid),
    )
    for pid in fractional[: everything - sum(rounded.values())]:
        rounded[pid] += 1
    accepts = _tag_rule(subs, configs.rack_aware_assignment_tags)
    ceil = {pid: -(-everything * c // total_cap) for pid, c in cap.items()}
    equal = len(set(cap.values())) == 1
    standbys = {pid: Fraction(len(r), cap[pid]) for pid, r in replicas.items()}

    def keeps_standbys_even(g: uuid.UUID, t: uuid.UUID) -> bool:
        after = {**standbys, g: standbys[g] - Fraction(1, cap[g]), t: standbys[t] + Fraction(1, cap[t])}
        return max(after.values()) - min(after.values()) <= max(standbys.values()) - min(standbys.values())

    pairs = [
        *(
            (g, t)
            for limit in ((ceil, rounded) if equal else (ceil,))
            for g in load
            if load[g] > limit[g]
            for t in load
            if load[t] < limit[t] and (load[t] + 1) / cap[t] <= load[g] / cap[g]
            and (equal or keeps_standbys_even(g, t))
        ),
        *((g, t) for g in load for t in load if g != t and (load[t] + 1) / cap[t] <= (load[g] - 1) / cap[g]),
    ]
    for giver, taker in pairs:
        for t in replicas[giver]:
            runs = [p for p, a in result.clients.items() if t in a.active or t in replicas[p]]
            others = [p for p in runs if p != giver]
            assert taker in runs or not accepts(others, taker), (
                f"standby {t} could move from {giver} (load {load[giver]}, capacity {cap[giver]}) to "
                f"{taker} (load {load[taker]}, capacity {cap[taker]})"
            )


def check_balance(
    tasks: list[TaskId], subs: list[ClientState], end: dict[TaskId, int], result: AssignmentResult
) -> None:
    """Stateful tasks: every client within [floor, ceil] of its capacity share, except where capacities
    differ and stateless tasks run too: then the stateful counts leave the stateless ones room to even
    out the threads (quotas.joint_bounds), within the shares of each subtopology below. Each subtopology,
    stateful or stateless: a client runs the floor or the ceil of its capacity share of it (Kafka's
    assignors spread every subtopology). Where capacities differ, a client may run fewer stateful tasks
    than the floor of its share (never more than the ceil): down to its subtopology floors added up,
    and with one subtopology, where that is the floor, one below it. Kafka's own criterion
    (balanceTasksOverThreads' shouldMoveATask) balances per thread and knows no floors, and the floors
    can cost evenness (40 tasks on capacities 3 x 5, 2 x 2 and 1 x 5: a three-thread client at 4 of its
    5 lets every one-thread client run 2, threads within 2/3 rather than 1; quotas.capacity_quotas takes
    that only where the threads come out more even). All actives (per thread), with equal capacities: no stateless
    task could move to a client that would then run fewer per capacity unit than its giver does now,
    where both stay within their shares of the task's subtopology."""
    cap = {s.process_id: s.capacity for s in subs}
    total_cap = sum(cap.values())
    stateful = {pid: {t for t in a.active if t in end} for pid, a in result.clients.items()}
    stateless = {pid: a.active - stateful[pid] for pid, a in result.clients.items()}
    n_stateful = sum(1 for t in tasks if t in end)
    differ = len(set(cap.values())) > 1
    joint = differ and n_stateful < len(set(tasks))

    # Per pool: a subtopology's stateful and stateless tasks are spread each on their own.
    def key(t: TaskId) -> tuple[str | None, int, bool]:
        return t.topology_name, t.subtopology, t in end

    sizes = Counter(map(key, tasks))
    pools = Counter(is_stateful for _, _, is_stateful in sizes)
    below = {sub: int(differ and pools[sub[2]] == 1) for sub in sizes}  # one below the floor: see the docstring
    for pid, load in stateful.items() if not joint else ():
        lo, hi = n_stateful * cap[pid] // total_cap, -(-n_stateful * cap[pid] // total_cap)
        if differ:  # see the docstring
            floors = sum(sizes[sub] * cap[pid] // total_cap for sub in sizes if sub[2])
            lo = lo - 1 if pools[True] == 1 else min(lo, floors)
        assert lo <= len(load) <= hi, \
            f"{pid} (capacity {cap[pid]}) runs {len(load)} stateful tasks, share is {lo}..{hi}"
    held = {pid: Counter(map(key, a.active)) for pid, a in result.clients.items()}

    def floor(sub: tuple[str | None, int, bool], pid: uuid.UUID) -> int:
        return sizes[sub] * cap[pid] // total_cap

    def ceil(sub: tuple[str | None, int, bool], pid: uuid.UUID) -> int:
        return -(-sizes[sub] * cap[pid] // total_cap)

    for pid, counts in held.items():
        for sub in sizes:
            assert floor(sub, pid) - below[sub] <= counts[sub] <= ceil(sub, pid), (
                f"{pid} (capacity {cap[pid]}) runs {counts[sub]} tasks of subtopology {sub}, "
                f"its share is {floor(sub, pid)}..{ceil(sub, pid)}"
            )
    if differ:
        return
    for giver, given in stateless.items():
        for sub in set(map(key, given)):
            if held[giver][sub] == floor(sub, giver):
                continue
            for taker, a in result.clients.items():
                if held[taker][sub] < ceil(sub, taker):
                    assert len(a.active) + 1 >= len(result.clients[giver].active), (
                        f"{taker} ({len(a.active)} actives) should take a stateless task of {sub} from "
                        f"{giver} ({len(result.clients[giver].active)} actives)"
                    )
