"""Scale-out side by side: each system runs on one worker, fed at a fixed rate; mid-stream one worker
is added, and the figure is the throughput of the tasks that did not move, during the change, as a
fraction of theirs before it (issue 19: at least 0.90; an eager protocol stops every task).

Per-task throughput is read from the output: every output carries its key's count, so the records a
task has processed by a broker time are the counts of its keys (task = input partition, murmur2 of
the key) as of that time. It counts a record when its effect comes out, whatever the system's output
cadence (Kafka Streams' record cache folds updates to a key between commits). The windows:

- before: the BEFORE_S seconds before the worker was added (its start-up already takes CPU from the
  others on this 2-core machine: seconds for a JVM or a task host);
- during: from the group's first round after the worker was added (its join noticed) until the
  change is done (the group settled, the new worker holding its tasks), at least MIN_DURING_S long
  and at least twice the stayed tasks' longest output gap before it (output comes in batches or at
  commits: a shorter window measures their cadence, and one shorter than the gap between two outputs
  can hold none). A stall that is caught up before the change ends is not seen: the figure is the
  throughput over the change.

Each system reports when the change started and ended and which tasks moved: streams_rt's bench app from
its coordinator's status (WORK/scale-out.json), Kafka Streams' app from its state listener and its local
threads' metadata (`peers-state` and `peers-tasks` lines), Quix Streams' app likewise from its
consumer's rebalance callbacks. acceptable.recovery.lag is set high in streams_rt and Kafka Streams, so
the moved tasks move at once (restored there as actives) rather than after a warm-up and a probing
rebalance minutes later; the tasks that stay are what this figure is about."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.peers.latency import WARM_UP_S, Feed, feed
from bench.peers.processes import SystemProcesses
from bench.peers.systems import APPS, KSTREAMS_BUILD, QUIET_JAVA, QUIX_PYTHON, Run, environment, restarts_note
from bench.peers.workload import PARTITIONS, OutputWatch, create_topics, wait_for_output
from streams_rt.kafka.partitioner import partition_for

ADD_AFTER_S = 15.0  # into the timed part of the feed
BEFORE_S = 10.0
MIN_DURING_S = 1.0
CHANGE_BUDGET_S = 90.0  # input keeps coming this long after the worker is added (the change must end in it)
CATCH_UP_S = 120.0
REPORT_TIMEOUT_S = 30.0
BIG_LAG = 2**40  # acceptable.recovery.lag: every replica counts as caught up


@dataclass(frozen=True)
class Change:
    """When a scale-out's change started and ended (epoch ms) and which tasks (input partitions) moved."""

    started_ms: float
    done_ms: float
    moved: frozenset[int]


@dataclass(frozen=True)
class ScaleOut:
    system: str
    label: str
    commands: Callable[[Run], list[list[str]]]  # the system on one worker
    add: Callable[[Run], list[list[str]]]  # adds a worker: the commands of its processes (none: done in place)
    change: Callable[[Run, float], Change]  # (run, epoch ms the worker was added): the change it made


class TaskProgress:
    """Fed each output (key, count, broker time ms): per task, the records that came out, timed."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.task_of: dict[str, int] = {}
        self.records: dict[int, list[tuple[int, int]]] = {t: [] for t in range(PARTITIONS)}

    def __call__(self, key: str, count: int, ts_ms: int) -> None:
        task = self.task_of.get(key)
        if task is None:
            task = self.task_of[key] = partition_for(key.encode(), PARTITIONS)
        new = count - self.seen.get(key, 0)
        if new > 0:
            self.seen[key] = count
            self.records[task].append((ts_ms, new))

    def longest_gap(self, tasks: frozenset[int], from_ms: float, to_ms: float) -> float:
        """The longest span in seconds within [from_ms, to_ms) with no output of `tasks` (a stall, or
        the output cadence: batches, commits)."""
        times = sorted({from_ms, to_ms, *(ts for t in tasks for ts, _ in self.records[t] if from_ms <= ts < to_ms)})
        return max(b - a for a, b in zip(times, times[1:], strict=False)) / 1000

    def rate(self, tasks: frozenset[int], from_ms: float, to_ms: float) -> float:
        """Records/s of `tasks` that came out in [from_ms, to_ms)."""
        total = sum(n for t in tasks for ts, n in self.records[t] if from_ms <= ts < to_ms)
        return total / ((to_ms - from_ms) / 1000)


# -- streams_rt: the bench app adds a task host when WORK/add-host appears -----------------------
def _streams_rt_commands(run: Run) -> list[list[str]]:
    return [[sys.executable, str(APPS / "streams_rt_app.py"), run.bootstrap, run.source, run.sink, str(run.work),
             str(max(1, run.batch_records // 4)), "--hosts", "1", "--acceptable-recovery-lag", str(BIG_LAG)]]


def _streams_rt_add(run: Run) -> list[list[str]]:
    (run.work / "add-host").touch()
    return []


def _streams_rt_change(run: Run, added_ms: float) -> Change:
    report_file = run.work / "scale-out.json"
    deadline = time.monotonic() + REPORT_TIMEOUT_S
    while not report_file.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"streams_rt app wrote no {report_file.name}")
        time.sleep(0.2)
    report = json.loads(report_file.read_text())
    started = report["round_started_ms"] if report["round_started_ms"] is not None else added_ms
    return Change(started, report["done_ms"], frozenset(int(t.split("_")[1]) for t in report["moved"]))


# -- Kafka Streams: a second instance of the same application --------------------------------------
Commands = Callable[[Run], list[list[str]]]


def _kafka_streams(i: int) -> Commands:
    """Instance i (one stream thread) of the application: 0 first, 1 the one added."""
    def commands(run: Run) -> list[list[str]]:
        classpath = f"{KSTREAMS_BUILD / 'peers-kstreams-1.jar'}:{KSTREAMS_BUILD / 'libs'}/*"
        app_id = f"peers-scale-{run.sink}"  # both instances, one application
        return [["java", "-Xmx1g", QUIET_JAVA, "-cp", classpath, "peers.CountSum", run.bootstrap, run.source,
                 run.sink, app_id, str(run.work / f"state-{i}"), "1", "0", str(BIG_LAG)]]
    return commands


def _quix(i: int) -> Commands:
    """Process i of the Quix Streams application (its consumer group): 0 first, 1 the one added."""
    def commands(run: Run) -> list[list[str]]:
        return [[str(QUIX_PYTHON), str(APPS / "quix_app.py"), run.bootstrap, run.source, run.sink,
                 str(run.work / f"state-{i}"), f"peers-scale-{run.sink}"]]
    return commands


LINE = re.compile(r"^peers-(state|tasks) (\d+) ?(.*)$")


def _rebalance_lines(log: Path) -> list[tuple[str, int, str]]:
    found = []
    for line in log.read_text(errors="replace").splitlines():
        if (m := LINE.match(line)) is not None:
            found.append((m.group(1), int(m.group(2)), m.group(3)))
    return found


def _printed_change(run: Run, added_ms: float) -> Change:
    """From the apps' `peers-state` and `peers-tasks` lines. Started: the first instance leaves
    RUNNING after the addition; done: the last move back to RUNNING of either instance (the group
    settled); moved: the new instance's tasks."""
    first, second = _rebalance_lines(run.work / "system.log"), _rebalance_lines(run.work / "added.log")
    events = [e for e in first + second if e[1] >= added_ms]
    leaving = [ts for kind, ts, text in events if kind == "state" and text.startswith("RUNNING ")]
    back = [ts for kind, ts, text in events if kind == "state" and text.endswith(" RUNNING")]
    tasks = [text for kind, _, text in second if kind == "tasks"]
    if not leaving or not back or not tasks:
        raise RuntimeError(f"no rebalance seen after the second instance started: {events}")
    moved = frozenset(int(t.split("_")[1]) for t in tasks[-1].split(",") if t)
    return Change(min(leaving), max(back), moved)


# Kafka Streams 4.x runs the cooperative protocol only: upgrade.from=2.3, which chose the eager one,
# is refused ("The eager rebalancing protocol is no longer supported in 4.0"). Quix Streams' consumer
# uses the eager range assignor: every partition is revoked at each rebalance.
SCALE_OUTS = [
    ScaleOut("streams_rt", "cooperative", _streams_rt_commands, _streams_rt_add, _streams_rt_change),
    ScaleOut("Kafka Streams", "cooperative", _kafka_streams(0), _kafka_streams(1), _printed_change),
    ScaleOut("Quix Streams", "eager (range assignor)", _quix(0), _quix(1), _printed_change),
]


@dataclass
class _Added:
    at_ms: float = 0.0
    procs: list[SystemProcesses] = field(default_factory=list)


def measure(case: ScaleOut, run: Run, keys: int, rate: float) -> tuple[float, str]:
    """(the non-moving tasks' throughput during the change / before it, a note); NaN when the output
    is wrong or the change did not happen while input came."""
    run.work.mkdir(parents=True)
    create_topics(run.bootstrap, run.source, [run.sink])
    feed_state = Feed(keys)
    progress = TaskProgress()
    procs = SystemProcesses(case.commands(run), environment(), run.work / "system.log")
    watch = OutputWatch(run.bootstrap, run.sink, on_output=progress)
    added = _Added()

    def add_when_due() -> None:
        while not feed_state.timed_from_ms or time.time() * 1000 < feed_state.timed_from_ms + ADD_AFTER_S * 1000:
            time.sleep(0.05)
        added.at_ms = time.time() * 1000
        commands = case.add(run)
        if commands:
            added.procs.append(SystemProcesses(commands, environment(), run.work / "added.log"))

    adder = threading.Thread(target=add_when_due, daemon=True)  # waits for the feed's timed part
    adder.start()
    try:
        fed = feed(run.bootstrap, run.source, feed_state, rate, ADD_AFTER_S + CHANGE_BUDGET_S,
                   lambda: watch.end_offset() > 0)
        adder.join(timeout=WARM_UP_S + ADD_AFTER_S + 30)
        if not fed or not added.at_ms:
            return float("nan"), "never ready or no worker added"
        alive = lambda: procs.running() and all(p.running() for p in added.procs)  # noqa: E731
        verified = wait_for_output(watch, feed_state.expected(), CATCH_UP_S, alive)
    finally:
        for p in [procs, *added.procs]:
            p.stop()
        watch.close()
    if not verified:
        return float("nan"), f"output wrong or incomplete ({watch.mismatches(feed_state.expected()):,} keys differ)"
    try:
        change = case.change(run, added.at_ms)
    except RuntimeError as e:
        return float("nan"), f"no change seen: {e}"
    if change.done_ms > feed_state.timed_to_ms:
        late_s = (change.done_ms - feed_state.timed_to_ms) / 1000
        return float("nan"), f"the change ended {late_s:.0f} s after the input stopped"
    stayed = frozenset(range(PARTITIONS)) - change.moved
    cadence_s = progress.longest_gap(stayed, added.at_ms - BEFORE_S * 1000, added.at_ms)
    during_to = max(change.done_ms, change.started_ms + max(MIN_DURING_S, 2 * cadence_s) * 1000)
    before = progress.rate(stayed, added.at_ms - BEFORE_S * 1000, added.at_ms)
    during = progress.rate(stayed, change.started_ms, during_to)
    note = (f"{case.label}; tasks {sorted(stayed)} stayed, {sorted(change.moved)} moved; {before:,.0f} records/s "
            f"before, {during:,.0f} during the change ({(change.done_ms - change.started_ms) / 1000:.1f} s, "
            f"from {(change.started_ms - added.at_ms) / 1000:.1f} s after the worker was added; "
            f"window {(during_to - change.started_ms) / 1000:.1f} s; longest output gap of the stayed tasks "
            f"{progress.longest_gap(stayed, change.started_ms, during_to):.1f} s during, "
            f"{cadence_s:.1f} s before)"
            f"{restarts_note(run)}")
    if not stayed or before <= 0:
        return float("nan"), note
    return during / before, note
