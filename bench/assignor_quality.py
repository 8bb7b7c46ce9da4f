"""Benchmark: where tasks land and how fast, ours against Kafka Streams' HighAvailabilityTaskAssignor
(kafka-streams 4.1.1, through bench/assignor_java), on identical inputs, seeded, each group rebalanced
until stable; beside them the figures of a reference assignor (ours at an earlier commit) kept in
bench/results/assignor_quality_reference.json, so a regression shows.

Each assignor runs its own simulated group from the same start through the same events (clients
joining and leaving); a group only ever sees its own assignor's output. One step of the timeline is one
probing.rebalance.interval.ms: a group rebalances at a step when an event happened or its assignor
asked for a probing rebalance (ours runs EAGER, like Kafka's assignor alone: no follow-up rounds);
otherwise it keeps its assignment. Within a step, changelogs grow, actives keep up (after restoring what
they lacked), and standbys and warm-ups restore up to `restore_rate` records. All groups spend the
same number of steps on each event (the slowest one's rounds to stable plus a tail; the reference's
recorded rounds count too), so per-step counts compare like for like. An "event" below is the start
(state left by an earlier life of the group, nobody running anything) or a membership change.

Metrics, per seed (ours, the reference, Kafka's); the last columns list the seeds where ours is worse
than Kafka's and than the reference's:
  actives moved / event  active tasks whose client changed, per event (all its rounds)
  rounds, start          rebalances until the assignor stops asking for a probing rebalance, from the start
  rounds / event         the same after a membership event, the mean over the events, and the worst event
  round-one / client     actives per client in the first round after each membership event: max - min over
                         clients of (actives - capacity share of all tasks), in tasks; the worst event. With
                         equal capacities: max - min actives. (The start's first round is left out: with
                         nobody caught up KIP-441 puts every active on its least-lag client.)
  round-one / thread     the same per capacity unit: max - min of actives / capacity
  worst round / client   the same two over every round but the start's first (the stable ones included)
  worst round / thread
  round-one cold standbys  standbys (and warm-ups) placed on a client holding no state for the task, in
                         the first round after each event, the mean over the events
  cold placements / event  actives and standbys placed on a client holding no state for the task (a full
                         restore each), per event (all its rounds)
  cold actives           actives placed on a client that is not caught up while another client had less lag
                         (KIP-441: with nobody caught up, the active goes to the least lag)
  extra restore records  records restored beyond what the least-lag client would have had to restore, by
                         actives placed on clients that are not caught up (what cold actives cost)
  restore records        all records the clients newly running an active had to restore first (diagnostic:
                         it also depends on which tasks the departing clients happened to hold)
  no hot standby         task-steps in which no standby (or warm-up) of a task was caught up although another
                         client than the active's was ("avoidable"), and all such task-steps (diagnostic: a
                         task that loses its only caught-up replica has none until a new one restores)
  cold standbys / round  standbys placed on a client with no state for the task, per rebalance (diagnostic)
  balance                at each stable point, the worst: max - min of all tasks (actives and standbys) per
                         capacity unit ("overall"), of actives per capacity unit ("per thread"), of standbys per
                         capacity unit ("standby"); "crowded subtopologies": subtopologies where a client runs
                         more than its ceil(partitions x capacity / total capacity) actives. Compared only where
                         both groups settled after every event
  standby bound          at each stable point, a lower bound on the standby spread of any placement whose tag
                         deficit is at most the group's and whose stateful actives per client lie within the
                         floor and ceil of its capacity share (or at the group's count): bench/standby_bound.py;
                         the worst over the stable points, as the spread and the deficit are (the Kafka column:
                         at Kafka's deficit). Listed: seeds where ours is above it
  Point 4 and tag coverage: with rack-aware tags, even standbys and covered tag values can pull
  apart (a zone with one client must hold a replica of every task). A seed counts as ours worse on
  the standby spread when ours is higher than Kafka's, unless Kafka's tag deficit is higher than ours
  and our spread is at the bound for our deficit: then no placement covering the tags as well as ours
  has more even standbys, and Kafka's lower spread is bought with coverage we keep. A seed where ours
  is above that bound counts as worse whatever Kafka's deficit (we might have had both). The bound is
  a relaxation (per tag value counts, not each task's replicas), so it may lie below what any real
  placement reaches: that can only count a seed as worse that is not, never the reverse. Such seeds
  are shown apart ("not worse ...") on the standby spread line.
  tag deficit            at each stable point, per task and tag key, the values its active and standbys could
                         cover but do not (min(replicas, values) - values covered), summed (rack-tagged
                         scenarios; half the tagged random ones have two keys, zone and rack)
  fixpoint changes       at each stable point, tasks (actives and standbys) that change when the group
                         rebalances once more with nothing changed, summed; "unsettled": events after which
                         an assignor never stopped probing
  ms / round             time per round of ours and of Kafka's assignor on the same input (each round our
                         group makes is also given to Kafka's assignor, its answer discarded): the least CPU
                         time of the timing thread over --timing-runs runs after a warm-up run, on both sides
                         (CPU time: a long run on a shared machine disturbs it less than wall time; the
                         JVM's GC and JIT threads are not in Kafka's, which favours Kafka's figure). Kafka's
                         JVM serves every problem of the run, so its JIT is warm. The reference is not
                         timed. Per family, the ratio of the summed times closes the report.

Scenarios: the named families below (5 seeds each) and 300 random ones (every third rack-tagged, half of
those by zone and rack; reported as the families "random" and "random-tagged"). In the named families
max.warmup.replicas is 8 and a step restores 10M records, enough for any warm-up: with Kafka's default
of 2 its assignor needs hundreds of rounds here and would not settle within the limit. The last lines
say, per point of issue 21, on how many seeds ours is worse than Kafka's, per family the rounds after
an event and the time ratio, and end with the worst family's time ratio against its target.

Run: .venv/bin/python bench/assignor_quality.py [--random N] [--seeds N] [--only NAME] [--timing-runs N]
     [--also COMMIT] [--record-reference COMMIT]
(--also: run ours at that commit too, as a third group, shown in the reference column; --record-reference:
the same, then write its figures to the reference file.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

import streams_rt.assignment as current_assignment  # noqa: E402
from bench.assignor import Assignment, KafkaClient, KafkaHarness  # noqa: E402
from bench.assignor_at import assignor_at, describe, resolve_commit  # noqa: E402
from bench.standby_bound import Member as BoundMember  # noqa: E402
from bench.standby_bound import standby_spread_bound  # noqa: E402
from streams_rt.assignment import AssignmentConfigs, RebalanceProtocol  # noqa: E402
from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, TaskId  # noqa: E402

MAX_ROUNDS = 400  # per event; an assignor still probing after this many rounds is "unsettled"
TAIL_STEPS = 8  # steps all groups run past the slowest one's stable point, so restores finish
REFERENCE = BENCH / "results" / "assignor_quality_reference.json"


# ---------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Client:
    pid: uuid.UUID
    capacity: int
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    """Clients joining (`add`) and leaving (`drop`) at the same step."""

    add: tuple[Client, ...] = ()
    drop: tuple[uuid.UUID, ...] = ()

    def __str__(self) -> str:
        parts = [f"+{len(self.add)}"] if self.add else []
        return " ".join(parts + ([f"-{len(self.drop)}"] if self.drop else []))


@dataclass(frozen=True)
class Scenario:
    family: str
    seed: int
    tasks: list[TaskId]
    stateless: frozenset[TaskId]
    configs: AssignmentConfigs
    clients: list[Client]
    events: list[Event]
    end: dict[TaskId, int]  # changelog end-offset sums at the start (stateful tasks)
    growth: dict[TaskId, int]  # records added per step
    state: dict[uuid.UUID, dict[TaskId, int]]  # state directories at the start: offset sums
    restore_rate: int  # records a standby or warm-up restores per step

    @property
    def tagged(self) -> bool:
        return bool(self.configs.rack_aware_assignment_tags)


def _pid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128))


def _old_state(
    rng: random.Random, tasks: Sequence[TaskId], end: dict[TaskId, int], clients: Sequence[Client], share: float
) -> dict[uuid.UUID, dict[TaskId, int]]:
    """State left on disk by an earlier life of the group: each client holds a `share` of the stateful
    tasks, each at a random age (uneven lags; hardly anyone caught up)."""
    state: dict[uuid.UUID, dict[TaskId, int]] = {}
    for c in clients:
        state[c.pid] = {t: int(end[t] * rng.random() ** 0.5) for t in tasks if t in end and rng.random() < share}
    return state


def _build(
    family: str,
    seed: int,
    rng: random.Random,
    subtopologies: int,
    partitions: Callable[[], int],
    stateless_share: float,
    clients: list[Client],
    events: list[Event],
    configs: AssignmentConfigs,
    state_share: float,
) -> Scenario:
    tasks = [TaskId(s, p) for s in range(subtopologies) for p in range(partitions())]
    stateless_subs = {s for s in range(subtopologies) if rng.random() < stateless_share}
    stateless = frozenset(t for t in tasks if t.subtopology in stateless_subs)
    hot = {s: rng.choice([20_000, 50_000, 200_000]) for s in range(subtopologies)}
    end = {t: rng.randint(1_000_000, 8_000_000) for t in tasks if t not in stateless}
    growth = {t: hot[t.subtopology] for t in end}
    state = _old_state(rng, tasks, end, clients, state_share)
    return Scenario(family, seed, tasks, stateless, configs, clients, events, end, growth, state, 10_000_000)


def uneven_lags(seed: int) -> Scenario:
    """200 tasks, 10 clients of mixed capacities, one standby; the group restarts on state of uneven
    age (nobody caught up), then gains a client and loses two."""
    rng = random.Random(seed)
    clients = [Client(_pid(rng), rng.choice([1, 2, 2, 4])) for _ in range(10)]
    events = [Event(add=(Client(_pid(rng), 2),)), Event(drop=tuple(c.pid for c in rng.sample(clients, 2)))]
    return _build("uneven-lags", seed, rng, 10, lambda: 20, 0.0, clients, events,
                  AssignmentConfigs(num_standby_replicas=1, max_warmup_replicas=8), 0.4)


def rack_tagged(seed: int) -> Scenario:
    """200 tasks over 12 rack-tagged clients of mixed capacities in three zones, two standbys spread
    over zones; scale up by two, down by three."""
    rng = random.Random(seed)

    def zone() -> dict[str, str]:
        return {"zone": rng.choice("abc")}

    clients = [Client(_pid(rng), rng.choice([1, 2, 3]), zone()) for _ in range(12)]
    events = [
        Event(add=(Client(_pid(rng), 2, zone()), Client(_pid(rng), 1, zone()))),
        Event(drop=tuple(c.pid for c in rng.sample(clients, 3))),
    ]
    configs = AssignmentConfigs(num_standby_replicas=2, rack_aware_assignment_tags=("zone",))
    return _build("rack-tagged", seed, rng, 8, lambda: 25, 0.0, clients, events, configs, 0.3)


def many_subtopologies(seed: int) -> Scenario:
    """50 subtopologies x 4 partitions on 8 equal clients, one standby; one client joins, two leave."""
    rng = random.Random(seed)
    clients = [Client(_pid(rng), 1) for _ in range(8)]
    events = [Event(add=(Client(_pid(rng), 1),)), Event(drop=tuple(c.pid for c in rng.sample(clients, 2)))]
    return _build("many-subtopologies", seed, rng, 50, lambda: 4, 0.0, clients, events,
                  AssignmentConfigs(num_standby_replicas=1, max_warmup_replicas=8), 0.3)


def uneven_zones(seed: int) -> Scenario:
    """Zones of 6, 4 and 2 clients, one rack-aware standby; a client joins, then one leaves."""
    rng = random.Random(seed)
    clients = [Client(_pid(rng), 1, {"zone": z}) for z in "aaaaaabbbbcc"]
    events = [
        Event(add=(Client(_pid(rng), 1, {"zone": rng.choice("abc")}),)),
        Event(drop=(rng.choice(clients).pid,)),
    ]
    configs = AssignmentConfigs(num_standby_replicas=1, rack_aware_assignment_tags=("zone",))
    return _build("uneven-zones", seed, rng, 6, lambda: 20, 0.0, clients, events, configs, 0.3)


def random_scenario(seed: int) -> Scenario:
    """Random shapes: 1-8 subtopologies of 1-30 partitions (some stateless), 2-12 clients, equal or
    mixed capacities, 0-2 standbys, 2-8 warm-ups, a third rack-tagged (half of those by zone and rack),
    1-3 joins or departures."""
    rng = random.Random(1_000_000 + seed)
    tagged = seed % 3 == 0
    keys = ("zone", "rack") if seed % 6 == 0 else ("zone",)  # half the tagged ones have two tag keys
    zones = rng.choice(["ab", "abc", "abcd"])
    racks = rng.choice(["xy", "xyz"])

    def zone() -> dict[str, str]:
        if not tagged:
            return {}
        return {"zone": rng.choice(zones), "rack": rng.choice(racks)} if len(keys) == 2 else {"zone": rng.choice(zones)}

    equal = rng.random() < 0.5

    def capacity() -> int:
        return 1 if equal else rng.randint(1, 3)

    clients = [Client(_pid(rng), capacity(), zone()) for _ in range(rng.randint(2, 12))]
    present = [c.pid for c in clients]
    events = []
    for _ in range(rng.randint(1, 3)):
        if len(present) > 2 and rng.random() < 0.5:
            gone = tuple(rng.sample(present, rng.randint(1, min(2, len(present) - 1))))
            present = [p for p in present if p not in gone]
            events.append(Event(drop=gone))
        else:
            new = tuple(Client(_pid(rng), capacity(), zone()) for _ in range(rng.randint(1, 2)))
            present += [c.pid for c in new]
            events.append(Event(add=new))
    configs = AssignmentConfigs(
        num_standby_replicas=rng.randint(0, 2),
        max_warmup_replicas=rng.randint(2, 8),
        rack_aware_assignment_tags=keys if tagged else (),
    )
    family = "random-tagged" if tagged else "random"
    return _build(family, seed, rng, rng.randint(1, 8), lambda: rng.randint(1, 30), 0.25, clients, events,
                  configs, rng.choice([0.0, 0.3, 0.6]))


FAMILIES: dict[str, Callable[[int], Scenario]] = {
    "uneven-lags": uneven_lags,
    "rack-tagged": rack_tagged,
    "many-subtopologies": many_subtopologies,
    "uneven-zones": uneven_zones,
}


# ---------------------------------------------------------------- the simulated group


@dataclass
class Member:
    spec: Client
    active: dict[TaskId, int] = field(default_factory=dict)  # task -> generation it was assigned in
    standby: set[TaskId] = field(default_factory=set)
    offsets: dict[TaskId, int] = field(default_factory=dict)  # state directory: offset sums
    unheld: dict[TaskId, int] = field(default_factory=dict)  # steps since a directory was last assigned


@dataclass(frozen=True)
class Answer:
    assignment: Assignment
    probing: bool  # the assignor asked for a probing rebalance
    ms: float = 0.0  # its time on this input (0: not timed)


Solver = Callable[["Group"], Answer]


@dataclass
class RoundStats:
    moved: int = 0
    restore: int = 0
    extra_restore: int = 0
    cold_actives: int = 0
    cold_standbys: int = 0  # standbys (warm-ups included) on a client holding no state for the task
    cold_placements: int = 0  # actives and standbys on a client holding no state for the task
    per_client: float = 0.0  # actives: max - min of (actives - capacity share)
    per_thread: float = 0.0  # actives: max - min of actives per capacity unit
    ms: float = 0.0
    kafka_ms: float = 0.0  # Kafka's time on the same input (our group only)


class Group:
    """One assignor's group: members, their state directories and the changelogs. `time_kafka`, for our
    group: Kafka's time on each round's input."""

    def __init__(self, scenario: Scenario, solve: Solver, time_kafka: Callable[[Group], float] | None = None) -> None:
        self.scenario = scenario
        self.solve = solve
        self.time_kafka = time_kafka
        self.end = dict(scenario.end)
        self.members = {c.pid: Member(c, offsets=dict(scenario.state.get(c.pid, {}))) for c in scenario.clients}
        self.generation = 0
        self.wants_rebalance = True

    def lag(self, m: Member, t: TaskId) -> int:
        if t in m.active:
            return -2
        offset = m.offsets.get(t)
        return self.end[t] if offset is None or offset > self.end[t] else self.end[t] - offset

    def caught_up(self, m: Member, t: TaskId) -> bool:
        lag = self.lag(m, t)
        return lag == -2 or 0 <= lag <= self.scenario.configs.acceptable_recovery_lag

    def apply_event(self, event: Event) -> None:
        for c in event.add:
            self.members[c.pid] = Member(c)
        for pid in event.drop:
            del self.members[pid]
        self.wants_rebalance = True

    def rebalance(self) -> RoundStats:
        kafka_ms = self.time_kafka(self) if self.time_kafka is not None else 0.0
        answer = self.solve(self)
        assignment, self.wants_rebalance = answer.assignment, answer.probing
        stats = RoundStats(ms=answer.ms, kafka_ms=kafka_ms)
        stats.per_client, stats.per_thread = self.evenness(assignment)
        stateful = self.end
        before = {t: pid for pid, m in self.members.items() for t in m.active}
        least_lag = {t: min(self.lag(m, t) for m in self.members.values()) for t in stateful}
        self.generation += 1
        for pid, (active, standby) in assignment.items():
            m = self.members[pid]
            for t in active:
                if before.get(t) != pid:
                    stats.moved += 1
                if t in stateful and before.get(t) != pid:
                    lag = self.lag(m, t)
                    stats.restore += lag
                    if t not in m.offsets:
                        stats.cold_placements += 1
                    if not self.caught_up(m, t) and least_lag[t] < lag:
                        stats.cold_actives += 1
                        stats.extra_restore += lag - max(0, least_lag[t])
            cold = sum(1 for t in standby if t not in m.offsets and t not in m.active)
            stats.cold_standbys += cold
            stats.cold_placements += cold
        for pid, (active, standby) in assignment.items():
            m = self.members[pid]
            for t in m.active:
                if t in stateful and t not in active:
                    m.offsets[t] = self.end[t]  # closed: checkpointed
            m.active = {t: self.generation for t in active}
            m.standby = set(standby)
        return stats

    def evenness(self, assignment: Assignment) -> tuple[float, float]:
        """Actives per client (max - min of actives less the capacity share, in tasks) and per thread."""
        caps = {pid: self.members[pid].spec.capacity for pid in assignment}
        total_cap, n_tasks = sum(caps.values()), len(self.scenario.tasks)
        per_client = [len(a) - n_tasks * caps[pid] / total_cap for pid, (a, _s) in assignment.items()]
        return spread(per_client), spread([len(a) / caps[pid] for pid, (a, _s) in assignment.items()])

    def no_hot_standby(self) -> tuple[int, int]:
        """Stateful tasks none of whose standbys is caught up (when standbys are configured and possible):
        those for which another client than the active's is caught up, and all."""
        want = min(self.scenario.configs.num_standby_replicas, len(self.members) - 1)
        if want <= 0:
            return 0, 0
        hot: set[TaskId] = set()
        possible: set[TaskId] = set()
        for m in self.members.values():
            hot.update(t for t in m.standby if self.caught_up(m, t))
            possible.update(t for t in m.offsets if t not in m.active and t in self.end and self.caught_up(m, t))
        cold = [t for t in self.end if t not in hot]
        return sum(1 for t in cold if t in possible), len(cold)

    def advance(self) -> None:
        """One probing interval: changelogs grow, actives keep up, standbys restore, and the state
        cleaner deletes directories unassigned for longer than state.cleanup.delay.ms (Kafka's default
        equals the probing interval: a directory survives the next rebalance, not the one after)."""
        rate = self.scenario.restore_rate
        for t, g in self.scenario.growth.items():
            self.end[t] += g
        for m in self.members.values():
            for t in m.active:
                if t in self.end:
                    m.offsets[t] = self.end[t]
            for t in m.standby:
                m.offsets[t] = min(self.end[t], m.offsets.get(t, 0) + rate)
            for t in list(m.offsets):
                if t in m.active or t in m.standby:
                    m.unheld.pop(t, None)
                elif m.unheld.get(t, 0) >= 1:
                    del m.offsets[t]
                    del m.unheld[t]
                else:
                    m.unheld[t] = 1

    def assignment(self) -> Assignment:
        return {pid: (frozenset(m.active), frozenset(m.standby)) for pid, m in self.members.items()}

    def fixpoint_changes(self) -> int:
        """Tasks (actives and standbys) that change when the group rebalances once more with nothing
        changed; the group keeps its assignment."""
        before, after = self.assignment(), self.solve(self).assignment
        return sum(len(before[p][0] ^ after[p][0]) + len(before[p][1] ^ after[p][1]) for p in before) // 2


def spread(values: Sequence[float]) -> float:
    return max(values) - min(values) if values else 0.0


def best_of(runs: int, solve: Callable[[], Any]) -> tuple[Any, float]:
    """solve's answer, and its least CPU time of `runs` runs after a warm-up run (ms)."""
    answer, best = solve(), math.inf
    for _ in range(runs):
        t0 = time.thread_time()
        solve()
        best = min(best, time.thread_time() - t0)
    return answer, best * 1000


def our_solver(assignment: ModuleType, runs: int) -> Solver:
    """Ours, from an assignment package (today's, or one at an earlier commit: bench/assignor_at.py);
    timed when runs > 0."""

    def solve(group: Group) -> Answer:
        s = group.scenario
        configs = assignment.AssignmentConfigs(
            num_standby_replicas=s.configs.num_standby_replicas,
            acceptable_recovery_lag=s.configs.acceptable_recovery_lag,
            max_warmup_replicas=s.configs.max_warmup_replicas,
            probing_rebalance_interval_ms=s.configs.probing_rebalance_interval_ms,
            rack_aware_assignment_tags=s.configs.rack_aware_assignment_tags,
        )
        states = []
        for pid, m in group.members.items():
            sums = {t: o for t, o in m.offsets.items() if t in group.end}
            sums.update({t: OFFSET_SUM_RUNNING_ACTIVE for t in m.active if t in group.end})
            states.append(assignment.ClientState(
                pid, m.spec.capacity, m.spec.tags, dict(m.active), frozenset(m.standby), sums))
        now = group.generation * s.configs.probing_rebalance_interval_ms

        def run() -> Any:
            return assignment.assign(s.tasks, states, dict(group.end), configs, RebalanceProtocol.EAGER, now,
                                     stateless=s.stateless)

        result, ms = best_of(runs, run) if runs else (run(), 0.0)
        out = {pid: (a.active, a.standby) for pid, a in result.clients.items()}
        return Answer(out, result.probing_rebalance_at_ms is not None, ms)

    return solve


def kafka_clients(group: Group) -> list[KafkaClient]:
    return [
        KafkaClient(
            pid, m.spec.capacity, frozenset(m.active), frozenset(m.standby),
            {t: o for t, o in m.offsets.items() if t in group.end and t not in m.active}, m.spec.tags,
        )
        for pid, m in sorted(group.members.items())
    ]


def kafka_solver(harness: KafkaHarness) -> Solver:
    def solve(group: Group) -> Answer:
        s = group.scenario
        answer = harness.solve(s.configs, dict(group.end), s.stateless, kafka_clients(group))
        return Answer(answer.assignment, answer.probing)

    return solve


def kafka_timer(harness: KafkaHarness, runs: int) -> Callable[[Group], float]:
    """Kafka's time on a group's input (the least CPU time of `runs` after a warm-up run), its answer
    unused."""

    def time_it(group: Group) -> float:
        s = group.scenario
        return harness.solve(s.configs, dict(group.end), s.stateless, kafka_clients(group), 1, runs).min_cpu_ms

    return time_it


# ---------------------------------------------------------------- metrics at a stable point


@dataclass
class Shape:
    overall: float = 0.0
    per_thread: float = 0.0
    standby: float = 0.0
    crowded: int = 0
    tag_deficit: int = 0
    standby_bound: float = 0.0  # the lowest standby spread a placement with this tag deficit can reach

    def worst(self, other: Shape) -> Shape:
        return Shape(
            max(self.overall, other.overall), max(self.per_thread, other.per_thread),
            max(self.standby, other.standby), max(self.crowded, other.crowded),
            max(self.tag_deficit, other.tag_deficit), max(self.standby_bound, other.standby_bound),
        )


def shape(group: Group) -> Shape:
    s = group.scenario
    members = list(group.members.values())
    caps = [m.spec.capacity for m in members]
    total_cap = sum(caps)
    per_sub: dict[int, Counter[int]] = {}
    partitions: Counter[int] = Counter()
    for t in s.tasks:
        partitions[t.subtopology] += 1
    for i, m in enumerate(members):
        for t in m.active:
            per_sub.setdefault(t.subtopology, Counter())[i] += 1
    crowded = sum(
        1 for sub, counts in per_sub.items()
        if any(n > math.ceil(partitions[sub] * caps[i] / total_cap) for i, n in counts.items())
    )
    deficit = 0
    replicas = 1 + min(s.configs.num_standby_replicas, len(members) - 1)
    for key in s.configs.rack_aware_assignment_tags:
        values = {m.spec.tags.get(key) for m in members}
        where: dict[TaskId, set[str | None]] = {}
        for m in members:
            for t in [*m.active, *m.standby]:
                if t in group.end:
                    where.setdefault(t, set()).add(m.spec.tags.get(key))
        deficit += sum(min(replicas, len(values)) - len(v) for v in where.values())
    standby = spread([len(m.standby) / m.spec.capacity for m in members])
    keys = s.configs.rack_aware_assignment_tags
    bound = 0.0  # the bound assumes every task has all its replicas (so does a settled group)
    if sum(len(m.standby) for m in members) == len(group.end) * (replicas - 1):
        bound = standby_spread_bound(
            [BoundMember(m.spec.capacity, tuple(m.spec.tags.get(k) for k in keys),
                         sum(t in group.end for t in m.active)) for m in members],
            len(group.end), replicas, deficit,
        )
    return Shape(
        overall=spread([(len(m.active) + len(m.standby)) / m.spec.capacity for m in members]),
        per_thread=spread([len(m.active) / m.spec.capacity for m in members]),
        standby=standby,
        crowded=crowded,
        tag_deficit=deficit,
        standby_bound=bound,
    )


# ---------------------------------------------------------------- one seed, every assignor


@dataclass
class Run:
    """One assignor's figures on one scenario: per event (the start first) its rounds."""

    events: list[list[RoundStats]] = field(default_factory=list)
    avoidable_no_hot_standby: int = 0
    no_hot_standby: int = 0
    shape: Shape = field(default_factory=Shape)
    fixpoint: int = 0
    unsettled: int = 0

    def add_step(self, group: Group) -> None:
        avoidable, cold = group.no_hot_standby()
        self.avoidable_no_hot_standby += avoidable
        self.no_hot_standby += cold

    @property
    def rounds(self) -> list[RoundStats]:
        return [r for event in self.events for r in event]

    def total(self, of: Callable[[RoundStats], float]) -> float:
        return sum(map(of, self.rounds))


def settle(group: Group, run: Run) -> int:
    """Rebalances (one per step) until the assignor stops asking; returns the steps taken."""
    rounds: list[RoundStats] = []
    while group.wants_rebalance and len(rounds) < MAX_ROUNDS:
        rounds.append(group.rebalance())
        run.add_step(group)
        group.advance()
    run.events.append(rounds)
    if group.wants_rebalance:
        run.unsettled += 1
    return len(rounds)


def idle(group: Group, run: Run, steps: int) -> None:
    for _ in range(steps):
        run.add_step(group)
        group.advance()


def compare(scenario: Scenario, groups: Sequence[Group], recorded_steps: Sequence[int] = ()) -> list[Run]:
    """Every group through the scenario's events; `recorded_steps`: per event, the reference's rounds
    when it was recorded (the horizon stretches to them, as it did then)."""
    runs = [Run() for _ in groups]
    for i, event in enumerate([None, *scenario.events]):
        for g in groups:
            if event is not None:
                g.apply_event(event)
        steps = [settle(g, r) for g, r in zip(groups, runs, strict=True)]
        horizon = max([*steps, *recorded_steps[i:i + 1]]) + TAIL_STEPS
        for g, r, n in zip(groups, runs, steps, strict=True):
            idle(g, r, horizon - n)
            r.shape = r.shape.worst(shape(g))
            r.fixpoint += g.fixpoint_changes()
    return runs


# ---------------------------------------------------------------- report


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _after_events(r: Run) -> list[list[RoundStats]]:
    return r.events[1:]


@dataclass(frozen=True)
class Metric:
    name: str
    value: Callable[[Run], float]
    point: str  # the issue point it measures: "" for movement and convergence, "(diag.)" for diagnostics
    applies: Callable[[Scenario], bool] = lambda s: True
    at_stable_points: bool = False  # compared only where both groups settled after every event
    excused: Callable[[Run, Run], bool] = lambda ours, kafka: False  # ours higher, yet not worse
    flags: Callable[[Run, Run], bool] | None = None  # diagnostics: which seeds to list, if not "ours higher"
    kafka: Callable[[Run, Run], float] | None = None  # Kafka's figure from (ours, Kafka's), if not value(Kafka's)
    versus_reference: bool = True  # compared with the reference assignor's figures


def _standbys(s: Scenario) -> bool:
    return s.configs.num_standby_replicas > 0


def _coverage_trade(ours: Run, kafka: Run) -> bool:
    """Kafka's standbys are more even because it gave up tag coverage, and ours are as even as any
    placement with our coverage can be (see the module docstring)."""
    return kafka.shape.tag_deficit > ours.shape.tag_deficit and ours.shape.standby <= ours.shape.standby_bound + 1e-9


def _first_rounds(r: Run) -> list[RoundStats]:
    """The first round after each membership event (the start's is the least-lag placement KIP-441 asks for)."""
    return [e[0] for e in _after_events(r) if e]


def _later_rounds(r: Run) -> list[RoundStats]:
    """Every round but the start's first."""
    return r.rounds[1:]


METRICS = [
    Metric("actives moved / event", lambda r: _mean([sum(x.moved for x in e) for e in r.events]), ""),
    Metric("rounds, start", lambda r: len(r.events[0]), ""),
    Metric("rounds / event", lambda r: _mean([len(e) for e in _after_events(r)]), ""),
    Metric("rounds, worst event", lambda r: max(map(len, _after_events(r))), ""),
    Metric("round-one / client", lambda r: max(x.per_client for x in _first_rounds(r)), ""),
    Metric("round-one / thread", lambda r: max(x.per_thread for x in _first_rounds(r)), ""),
    Metric("worst round / client", lambda r: max(x.per_client for x in _later_rounds(r)), ""),
    Metric("worst round / thread", lambda r: max(x.per_thread for x in _later_rounds(r)), ""),
    Metric("round-one cold standbys", lambda r: _mean([x.cold_standbys for x in _first_rounds(r)]), "", _standbys),
    Metric("cold placements / event", lambda r: r.total(lambda x: x.cold_placements) / len(r.events), ""),
    Metric("cold actives", lambda r: r.total(lambda x: x.cold_actives), "1"),
    Metric("extra restore records (M)", lambda r: r.total(lambda x: x.extra_restore) / 1e6, "1"),
    Metric("restore records (M)", lambda r: r.total(lambda x: x.restore) / 1e6, "1 (diag.)"),
    Metric("no hot standby, avoidable", lambda r: r.avoidable_no_hot_standby, "2", _standbys),
    Metric("no hot standby, all", lambda r: r.no_hot_standby, "2 (diag.)", _standbys),
    Metric("cold standbys / round", lambda r: r.total(lambda x: x.cold_standbys) / len(r.rounds), "2 (diag.)",
           _standbys),
    Metric("crowded subtopologies", lambda r: r.shape.crowded, "3", at_stable_points=True),
    Metric("standby spread / capacity", lambda r: r.shape.standby, "4", _standbys, True, _coverage_trade),
    Metric("standby bound (ours above)", lambda r: r.shape.standby_bound, "4 (diag.)", _standbys, True,
           flags=lambda ours, kafka: ours.shape.standby > ours.shape.standby_bound + 1e-9),
    Metric("tag deficit", lambda r: r.shape.tag_deficit, "5", lambda s: s.tagged, True),
    Metric("per-thread balance", lambda r: r.shape.per_thread, "6", at_stable_points=True),
    Metric("overall balance", lambda r: r.shape.overall, "(diag.)", at_stable_points=True),
    Metric("fixpoint changes", lambda r: r.fixpoint, "7"),
    Metric("unsettled events", lambda r: r.unsettled, "7"),
    Metric("ms / round", lambda r: r.total(lambda x: x.ms) / len(r.rounds), "time",
           kafka=lambda ours, _kafka: ours.total(lambda x: x.kafka_ms) / len(ours.rounds), versus_reference=False),
]
POINTS = ["1", "2", "3", "4", "5", "6", "7", "time"]


def figures(run: Run) -> dict[str, float]:
    """What the reference file keeps of a run (its times aside: they belong to the machine)."""
    return {m.name: float(m.value(run)) for m in METRICS if m.versus_reference}


@dataclass(frozen=True)
class Reference:
    """An earlier assignor's figures per scenario ("family/seed"): its metrics, its rounds per event
    (the horizon a run stretches to) and whether it settled after every event."""

    label: str
    scenarios: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, path: Path) -> Reference | None:
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return cls(data["label"], data["scenarios"])

    def of(self, s: Scenario) -> dict[str, Any] | None:
        return self.scenarios.get(f"{s.family}/{s.seed}")

    def steps(self, s: Scenario) -> list[int]:
        found = self.of(s)
        return [] if found is None else list(found["steps"])

    @staticmethod
    def entry(run: Run) -> dict[str, Any]:
        return {"metrics": figures(run), "steps": [len(e) for e in run.events], "settled": not run.unsettled}

    @staticmethod
    def write(path: Path, label: str, commit: str, results: Sequence[tuple[Scenario, Run]]) -> None:
        head = {"label": label, "commit": commit, "recorded by": "bench/assignor_quality.py --record-reference"}
        lines = [json.dumps(f"{s.family}/{s.seed}") + ": " + json.dumps(Reference.entry(r), sort_keys=True)
                 for s, r in results]  # one scenario a line: a new recording diffs by scenario
        body = ",\n".join(lines)
        path.write_text(json.dumps(head)[:-1] + ',\n"scenarios": {\n' + body + "\n}}\n")


@dataclass(frozen=True)
class Result:
    scenario: Scenario
    ours: Run
    kafka: Run
    reference: dict[str, Any] | None  # the reference's entry (Reference.entry) for this scenario


def _seeds(seeds: list[int]) -> str:
    return ", ".join(map(str, seeds[:12])) + (f" ... ({len(seeds)})" if len(seeds) > 12 else "")


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(results: list[Result], reference_label: str, timed: bool) -> None:
    order = [*FAMILIES, "random", "random-tagged"]
    families = sorted({r.scenario.family for r in results}, key=order.index)
    print(f"reference: {reference_label}")
    head = (f"{'family':<19} {'metric':<27} {'point':<9} {'seeds':>7} {'ours':>9} {'ref':>9} {'kafka':>9}"
            "  worse than Kafka on seeds | worse than ref on seeds")
    print(head)
    print("-" * len(head))
    worse_by_point: dict[str, int] = {}
    regressed: dict[str, int] = {}
    for family in families:
        rows = [r for r in results if r.scenario.family == family]
        for metric in METRICS:
            applicable = [r for r in rows if metric.applies(r.scenario)]
            rel = [r for r in applicable if not metric.at_stable_points or not (r.ours.unsettled or r.kafka.unsettled)]
            if not rel:
                continue

            def kafka_value(r: Result) -> float:
                return metric.kafka(r.ours, r.kafka) if metric.kafka else metric.value(r.kafka)  # noqa: B023

            ours = _mean([metric.value(r.ours) for r in rel])
            theirs = _mean([kafka_value(r) for r in rel])
            higher = [r for r in rel if metric.value(r.ours) > kafka_value(r) + 1e-9]
            worse = [r.scenario.seed for r in higher if not metric.excused(r.ours, r.kafka)]
            excused = [r.scenario.seed for r in higher if metric.excused(r.ours, r.kafka)]
            if metric.flags is not None:
                worse = [r.scenario.seed for r in rel if metric.flags(r.ours, r.kafka)]
            key = metric.point if metric.point and "diag" not in metric.point else metric.name
            if "diag" not in metric.point:
                worse_by_point[key] = worse_by_point.get(key, 0) + len(worse)
            refs = [r for r in rel if r.reference is not None and metric.versus_reference
                    and (not metric.at_stable_points or r.reference["settled"])]
            ref_text, back = "", ""
            if refs:
                ref_text = f"{_mean([r.reference['metrics'][metric.name] for r in refs if r.reference]):9.2f}"
                lost = [r.scenario.seed for r in refs
                        if r.reference and metric.value(r.ours) > r.reference["metrics"][metric.name] + 1e-9]
                back = _seeds(lost) or "-"
                if "diag" not in metric.point:
                    regressed[key] = regressed.get(key, 0) + len(lost)
            shown = _seeds(worse)
            if excused:
                shown = f"{shown or '-'}; not worse (at the bound, Kafka's coverage worse): {_seeds(excused)}"
            counted = f"{len(rel)}/{len(applicable)}" if len(rel) < len(applicable) else str(len(rel))
            print(f"{family:<19} {metric.name:<27} {metric.point:<9} {counted:>7} "
                  f"{ours:9.2f} {ref_text:>9} {theirs:9.2f}  {shown or '-'} | {back}")
        print()
    print("seeds: those compared; n/m: balance is compared at stable points, so only where both assignors")
    print("settled after every event (Kafka's assignor never stopped probing within the round limit on the rest).")
    for key in [*POINTS, *(m.name for m in METRICS if not m.point)]:
        label = f"point {key}" if key.isdigit() else key
        tail = f"; worse than the reference on {regressed[key]}" if key in regressed else ""
        print(f"{label:<24} ours worse than Kafka's on {worse_by_point.get(key, 0)} seed(s){tail}")
    print()
    ratios = []
    for family in families:
        rows = [r for r in results if r.scenario.family == family]
        after = [len(e) for r in rows for e in _after_events(r.ours)]
        line = f"{family:<19} rounds after an event: mean {_mean(after):.2f}, worst {max(after, default=0)}"
        if timed:
            ours_ms = sum(r.ours.total(lambda x: x.ms) for r in rows)
            kafka_ms = sum(r.ours.total(lambda x: x.kafka_ms) for r in rows)
            ratios.append(ours_ms / kafka_ms)
            per_seed = [r.ours.total(lambda x: x.ms) / r.ours.total(lambda x: x.kafka_ms) for r in rows]
            line += (f"; time ours/Kafka on the same inputs {ratios[-1]:.3f} (per seed: median "
                     f"{statistics.median(per_seed):.3f}, worst {max(per_seed):.3f})")
        print(line)
    print(_load())
    if ratios:  # the worst family's time ratio against the target
        print(f"ratio {max(ratios):.3f} target 1.0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per named scenario family")
    parser.add_argument("--random", type=int, default=300, help="random scenarios (every third rack-tagged)")
    parser.add_argument("--only", action="append", help="run only these families (names, 'random' or 'random-tagged')")
    parser.add_argument("--timing-runs", type=int, default=3, help="timed runs per round and side (0: no timing)")
    parser.add_argument("--also", metavar="COMMIT", help="run ours at this commit too, in the reference column")
    parser.add_argument("--record-reference", metavar="COMMIT",
                        help=f"run ours at this commit too and write its figures to {REFERENCE.name}")
    args = parser.parse_args()
    plan: list[Scenario] = []
    for name, make in FAMILIES.items():
        if not args.only or name in args.only:
            plan += [make(seed) for seed in range(args.seeds)]
    randoms = [random_scenario(seed) for seed in range(args.random)]
    plan += [s for s in randoms if not args.only or s.family in args.only]
    commit = args.record_reference or args.also
    stored = None if commit else Reference.load(REFERENCE)
    print(f"{len(plan)} scenarios, {_load()}", file=sys.stderr)
    started = time.perf_counter()
    results: list[Result] = []
    recorded: list[tuple[Scenario, Run]] = []
    with tempfile.TemporaryDirectory(prefix="assignor-quality-") as tmp:
        earlier = assignor_at(commit, Path(tmp) / "at") if commit else None
        kafka = KafkaHarness(Path(tmp))
        try:
            for i, scenario in enumerate(plan, 1):
                timer = kafka_timer(kafka, args.timing_runs) if args.timing_runs else None
                groups = [Group(scenario, our_solver(current_assignment, args.timing_runs), timer),
                          Group(scenario, kafka_solver(kafka))]
                if earlier is not None:
                    groups.append(Group(scenario, our_solver(earlier, 0)))
                runs = compare(scenario, groups, stored.steps(scenario) if stored else ())
                entry = Reference.entry(runs[2]) if earlier is not None else stored.of(scenario) if stored else None
                results.append(Result(scenario, runs[0], runs[1], entry))
                if earlier is not None:
                    recorded.append((scenario, runs[2]))
                if i % 25 == 0 or i == len(plan):
                    print(f"  {i}/{len(plan)} scenarios, {time.perf_counter() - started:.0f} s, {_load()}",
                          file=sys.stderr)
        finally:
            kafka.close()
    label = "none (no reference file)"
    if commit:
        label = f"ours at {describe(commit)}, run now"
        if args.record_reference:
            Reference.write(REFERENCE, f"ours at {describe(commit)}", resolve_commit(commit), recorded)
            label += f", written to {REFERENCE.relative_to(BENCH.parent)}"
    elif stored is not None:
        label = f"{stored.label} ({REFERENCE.relative_to(BENCH.parent)})"
    report(results, label, bool(args.timing_runs))


if __name__ == "__main__":
    main()
