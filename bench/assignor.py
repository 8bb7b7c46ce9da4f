"""Benchmark: our assignor against Kafka Streams' own HighAvailabilityTaskAssignor (kafka-streams 4.1.1),
on the same inputs, in the same run.

Cases: Kafka's StreamsAssignmentScaleTest shapes, KAFKA-9987's 2100 x 2100, and 10,000 tasks x 500
clients. For each case and each assignor, three rounds, each assignor always fed its own previous
output:
  init  - a new group: nobody owns anything;
  +1    - the init assignment reported back (actives running, standbys caught up) plus one new client;
  -1    - the init assignment reported back minus one client.
Every changelog is 5,000 records long, within acceptable.recovery.lag, so every client counts as
caught up and each assignor places tasks at its balanced target directly (the state a group reaches
once warm-ups are done); the warm-up path is exercised by the tests, not here.

Timed on both sides: from subscription data to the assignment. Ours: assign(), which computes lags
from offset sums. Kafka's: what StreamsPartitionAssignor does for its assignor's input (ClientState
per client, offset sums, initializePrevTasks, computeTaskLags) plus HighAvailabilityTaskAssignor.assign().

Printed per case: time (the slowest of the three rounds; each round the fastest of 5 measured runs
after warm-up runs, on both sides), the ratio ours/Kafka, the number of rounds in which ours was
faster, balance (max - min active tasks per capacity unit, worst round) and moves (active tasks whose
client changed against the previous assignment) after +1 and after -1.
Run: .venv/bin/python bench/assignor.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streams_rt.assignment import (  # noqa: E402
    AssignmentConfigs,
    ClientState,
    RebalanceProtocol,
    assign,
)
from streams_rt.kafka.jvm import compile_java, find_java  # noqa: E402
from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, TaskId  # noqa: E402

END_OFFSET = 5_000
MEASURED_RUNS = 5  # both sides report the fastest measured run: the least disturbed by a busy machine
JAVA_SRC = REPO / "bench" / "assignor_java" / "KafkaAssignorBench.java"
JAVA_OUT = REPO / "build" / "bench" / "assignor_java"


@dataclass(frozen=True)
class Case:
    name: str
    subtopologies: int
    partitions: int
    clients: int
    capacity: int
    standbys: int

    @property
    def tasks(self) -> list[TaskId]:
        return [TaskId(s, p) for s in range(self.subtopologies) for p in range(self.partitions)]


CASES = [
    Case("scale: 6000 partitions, 2 clients, 1 standby", 1, 6000, 2, 1, 1),
    Case("scale: 1000 partitions, 1000 clients, 1 standby", 1, 1000, 1000, 1, 1),
    Case("scale: 1000 partitions, 100 clients, 50 standbys", 1, 1000, 100, 1, 50),
    Case("scale: 1000 partitions, 10 clients x 1000 threads, 1 standby", 1, 1000, 10, 1000, 1),
    Case("KAFKA-9987: 2100 clients x 2100 tasks", 1, 2100, 2100, 1, 0),
    Case("10,000 tasks x 500 clients, 1 standby", 10, 1000, 500, 1, 1),
]

Assignment = dict[uuid.UUID, tuple[frozenset[TaskId], frozenset[TaskId]]]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- inputs, shared by both assignors


@dataclass(frozen=True)
class Member:
    pid: uuid.UUID
    capacity: int
    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()


def members_from(prev: Assignment, capacity: int) -> list[Member]:
    return [Member(pid, capacity, a, s) for pid, (a, s) in sorted(prev.items())]


def to_client_states(members: list[Member]) -> list[ClientState]:
    states = []
    for m in members:
        sums = {t: END_OFFSET for t in m.standby}
        sums.update({t: OFFSET_SUM_RUNNING_ACTIVE for t in m.active})
        states.append(
            ClientState(
                m.pid, m.capacity, owned_active={t: 1 for t in m.active}, owned_standby=m.standby,
                task_offset_sums=sums,
            )
        )
    return states


# ---------------------------------------------------------------- the two assignors


def run_ours(case: Case, members: list[Member], configs: AssignmentConfigs) -> tuple[float, Assignment]:
    tasks = case.tasks
    end = {t: END_OFFSET for t in tasks}
    states = to_client_states(members)
    best, result = float("inf"), None
    for i in range(1 + MEASURED_RUNS):  # one warm-up run, like Kafka's side
        t0 = time.perf_counter()
        result = assign(tasks, states, end, configs, RebalanceProtocol.EAGER, 0)
        if i:
            best = min(best, time.perf_counter() - t0)
    assert result is not None
    return best * 1000, {pid: (a.active, a.standby - a.warmup) for pid, a in result.clients.items()}


@dataclass(frozen=True)
class KafkaClient:
    """One client of a problem for Kafka's assignor, as its subscription describes it: `offsets` are the
    offset sums of the state it holds besides its running actives (-2, added by the harness)."""

    pid: uuid.UUID
    capacity: int
    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()
    offsets: Mapping[TaskId, int] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KafkaAnswer:
    min_ms: float
    runs: int
    assignment: Assignment  # per client: active, standby (warm-ups included: Kafka does not tell them apart)
    probing: bool  # the assignor asked for a probing rebalance
    min_cpu_ms: float  # the least CPU time of the measured runs (the JVM's timing thread)


class KafkaHarness:
    """One JVM for the whole run, so the JIT stays warm from case to case."""

    def __init__(self, workdir: Path) -> None:
        classpath = compile_java([JAVA_SRC], JAVA_OUT)
        self.workdir = workdir
        self.proc = subprocess.Popen(
            [find_java(), "-Xmx6g", "-XX:+UseParallelGC", "-cp", classpath, "KafkaAssignorBench"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self.n = 0

    def solve(
        self,
        configs: AssignmentConfigs,
        ends: Mapping[TaskId, int],
        stateless: Collection[TaskId],
        clients: Sequence[KafkaClient],
        warmup: int = 0,
        measure: int = 1,
        max_seconds: float = 15.0,
    ) -> KafkaAnswer:
        """Kafka's HighAvailabilityTaskAssignor on one problem: `ends` are the stateful tasks' changelog
        end-offset sums; `stateless` the other tasks."""
        self.n += 1
        problem, answer = self.workdir / f"p{self.n}.txt", self.workdir / f"r{self.n}.txt"
        lines = [
            " ".join([
                f"configs {configs.num_standby_replicas} {configs.acceptable_recovery_lag}",
                f"{configs.max_warmup_replicas} {configs.probing_rebalance_interval_ms}",
                *configs.rack_aware_assignment_tags,
            ]),
            f"iterations {warmup} {measure} {max_seconds}",
        ]
        lines += [f"task {t} {end}" for t, end in ends.items()]
        lines += [f"stateless {t}" for t in stateless]
        for c in clients:
            lines.append(" ".join([f"client {c.pid} {c.capacity}", *(f"{k}={v}" for k, v in sorted(c.tags.items()))]))
            lines.append("active " + " ".join(map(str, sorted(c.active))))
            lines.append("standby " + " ".join(map(str, sorted(c.standby))))
            lines.append("offsets " + " ".join(f"{t}:{o}" for t, o in sorted(c.offsets.items())))
        problem.write_text("\n".join(lines) + "\n")
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(f"{problem} {answer}\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().split()
        if not reply or reply[0] != "done":
            raise RuntimeError(f"Kafka harness failed on {problem}: {reply}")
        out: Assignment = {}
        pid = None
        active: frozenset[TaskId] = frozenset()
        for line in answer.read_text().splitlines():
            kind, *rest = line.split()
            if kind == "client":
                pid = uuid.UUID(rest[0])
            elif kind == "active":
                active = frozenset(TaskId.parse(x) for x in rest)
            elif kind == "standby":
                assert pid is not None
                out[pid] = (active, frozenset(TaskId.parse(x) for x in rest))
        problem.unlink()
        answer.unlink()
        return KafkaAnswer(float(reply[3]), int(reply[2]), out, reply[4] == "true", float(reply[5]))

    def run(
        self, case: Case, members: list[Member], configs: AssignmentConfigs, warmup: int, measure: int,
        max_seconds: float,
    ) -> tuple[float, int, Assignment]:
        """One timed bench round: every changelog END_OFFSET long, standbys caught up to it."""
        clients = [
            KafkaClient(m.pid, m.capacity, m.active, m.standby, {t: END_OFFSET for t in m.standby})
            for m in members
        ]
        ends = {t: END_OFFSET for t in case.tasks}
        answer = self.solve(configs, ends, (), clients, warmup, measure, max_seconds)
        return answer.min_ms, answer.runs, answer.assignment

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


# ---------------------------------------------------------------- quality


def balance(assignment: Assignment, capacity: Mapping[uuid.UUID, int]) -> float:
    per_cap = [len(a) / capacity[pid] for pid, (a, _s) in assignment.items()]
    return max(per_cap) - min(per_cap)


def moves(prev: Assignment, new: Assignment) -> int:
    before = {t: pid for pid, (a, _s) in prev.items() for t in a}
    return sum(1 for pid, (a, _s) in new.items() for t in a if before.get(t) != pid)


def check(case: Case, assignment: Assignment, who: str) -> None:
    """Both outputs must be valid: one active per task, standbys distinct from it and complete."""
    seen: dict[TaskId, uuid.UUID] = {}
    replicas: dict[TaskId, int] = {}
    for pid, (a, s) in assignment.items():
        assert not (a & s), f"{who}: active and standby overlap on {pid}"
        for t in a:
            assert t not in seen, f"{who}: {t} has two active owners"
            seen[t] = pid
        for t in s:
            replicas[t] = replicas.get(t, 0) + 1
    assert len(seen) == len(case.tasks), f"{who}: {len(case.tasks) - len(seen)} tasks unassigned"
    want = min(case.standbys, len(assignment) - 1)
    short = sum(1 for t in case.tasks if replicas.get(t, 0) != want)
    assert not short, f"{who}: {short} tasks without exactly {want} standbys"


# ---------------------------------------------------------------- driver


@dataclass
class Row:
    case: Case
    ours_ms: float = 0.0
    kafka_ms: float = 0.0
    kafka_once: bool = False
    bal: tuple[float, float] = (0.0, 0.0)
    add: tuple[int, int] = (0, 0)
    drop: tuple[int, int] = (0, 0)
    wins: int = 0


def bench_case(case: Case, kafka: KafkaHarness, rng: random.Random, quick: bool) -> Row:
    configs = AssignmentConfigs(num_standby_replicas=case.standbys)
    pids = sorted(uuid.UUID(int=rng.getrandbits(128)) for _ in range(case.clients))
    newcomer = uuid.UUID(int=rng.getrandbits(128))
    leaver = pids[len(pids) // 2]
    capacity = {pid: case.capacity for pid in [*pids, newcomer]}
    row = Row(case)
    fresh = [Member(pid, case.capacity) for pid in pids]
    warm, measure, cap_s = (0, 1, 15.0) if quick else (2, MEASURED_RUNS, 15.0)
    results: dict[str, dict[str, Assignment]] = {"ours": {}, "kafka": {}}
    times: dict[str, list[float]] = {"ours": [], "kafka": []}
    bal: dict[str, list[float]] = {"ours": [], "kafka": []}
    for step in ("init", "+1", "-1"):
        for who in ("ours", "kafka"):
            if step == "init":
                members = fresh
            else:
                members = members_from(results[who]["init"], case.capacity)
                if step == "+1":
                    members.append(Member(newcomer, case.capacity))
                else:
                    members = [m for m in members if m.pid != leaver]
            if who == "ours":
                ms, out = run_ours(case, members, configs)
            else:
                ms, runs, out = kafka.run(case, members, configs, warm, measure, cap_s)
                row.kafka_once |= runs < measure
            check(case, out, who)
            results[who][step] = out
            times[who].append(ms)
            bal[who].append(balance(out, capacity))
            log(f"    {step:>4} {who:>5}: {ms:10.1f} ms")
    row.ours_ms, row.kafka_ms = max(times["ours"]), max(times["kafka"])
    row.wins = sum(1 for o, k in zip(times["ours"], times["kafka"], strict=True) if o < k)
    row.bal = (max(bal["ours"]), max(bal["kafka"]))
    row.add = (moves(results["ours"]["init"], results["ours"]["+1"]),
               moves(results["kafka"]["init"], results["kafka"]["+1"]))
    row.drop = (moves(results["ours"]["init"], results["ours"]["-1"]),
                moves(results["kafka"]["init"], results["kafka"]["-1"]))
    return row


def jit_warmup(kafka: KafkaHarness) -> None:
    """Compile Kafka's hot paths before the first measured case."""
    case = Case("jit warm-up", 2, 300, 30, 1, 1)
    members = [Member(uuid.UUID(int=i + 1), 1) for i in range(case.clients)]
    kafka.run(case, members, AssignmentConfigs(num_standby_replicas=1), 300, 1, 20.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer Kafka repetitions")
    parser.add_argument("--case", type=int, action="append", help="run only these case numbers (1-based)")
    args = parser.parse_args()
    rng = random.Random(20_260_522)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="assignor-bench-") as tmp:
        kafka = KafkaHarness(Path(tmp))
        try:
            log("JIT warm-up of Kafka's assignor ...")
            jit_warmup(kafka)
            rows = []
            for i, case in enumerate(CASES, 1):
                if args.case and i not in args.case:
                    continue
                log(f"[{i}/{len(CASES)}] {case.name}")
                rows.append(bench_case(case, kafka, rng, args.quick))
        finally:
            kafka.close()
    print_table(rows)
    log(f"total {time.perf_counter() - started:.0f} s")


def print_table(rows: list[Row]) -> None:
    head = (
        f"{'case':<62} {'ours ms':>8} {'kafka ms':>9} {'ratio':>7} {'faster':>6}  {'balance ours/kafka':>18}"
        f"  {'moves +1 ours/kafka':>19}  {'moves -1 ours/kafka':>19}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        once = "*" if r.kafka_once else " "
        print(
            f"{r.case.name:<62} {r.ours_ms:8.1f} {r.kafka_ms:8.1f}{once} {r.ours_ms / r.kafka_ms:7.3f} {r.wins:>4}/3"
            f"  {r.bal[0]:8.3f} / {r.bal[1]:<7.3f}  {r.add[0]:8d} / {r.add[1]:<8d}  {r.drop[0]:8d} / {r.drop[1]:<8d}"
        )
    print()
    print("time: slowest of the three rounds (init, +1 client, -1 client); each round the fastest of 5 measured")
    print("runs after warm-up, both sides (* = Kafka measured once: a run took over 10 s or the time cap).")
    print("faster: rounds (of 3) in which ours beat Kafka's time.")
    print("balance: max - min active tasks per capacity unit (worst round). moves: active tasks whose client")
    print("changed against the previous assignment after one client joins / leaves.")
    under = all(r.ours_ms < 1000 for r in rows)
    faster = all(r.ours_ms < r.kafka_ms for r in rows)
    quality = all(
        r.bal[0] <= r.bal[1] + 1e-9 and r.add[0] <= r.add[1] and r.drop[0] <= r.drop[1] for r in rows
    )
    print(f"targets: every case under 1 s with ours: {'YES' if under else 'NO'}; "
          f"faster than Kafka (ratio < 1) in every case: {'YES' if faster else 'NO'}; "
          f"balance and moves no worse than Kafka's: {'YES' if quality else 'NO'}")


if __name__ == "__main__":
    main()
