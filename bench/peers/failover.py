"""Failover side by side: each system is fed at a fixed rate, one of its workers is killed (SIGKILL)
mid-stream, and the figure is the worst latency of the records produced in the second after the kill:
the time until the keys of the tasks that moved produce output again (the other keys' records come out
at their usual latency). With one standby (num.standby.replicas=1) and without, where the system has
standbys; Quix Streams has none (its state comes back from its changelog topics).

Workers: a streams_rt task host (local[2] runs two, as OS processes), one of two Kafka Streams
instances (one stream thread each), one of two Quix Streams processes, one of two Spark executor JVMs
for Spark SQL's groupBy().agg(): Spark's local[2] has no executor to kill (its executors are threads
of the driver), so that row runs in local-cluster[2,1,1024], and its state comes back by reloading the
lost executor's state stores from the checkpoint (Spark has no standbys).

State: a standby pays off by what it saves, restoring the lost tasks' changelogs, so before the feed
each system first processes `state_records` records of as many keys of their own ("ks..." keys, not
timed and not among the feed's keys); the feed starts once all of them came out. Without that, a few
seconds of feed leave changelogs that restore in well under a second, and failover with and without a
standby would both be the time to notice the dead worker and rebalance.

Rate: DEFAULT_RATE records/s for every system (run.py --failover-rate), not a share of streams_rt's
throughput: that is measured at-least-once on batches of 500k records per task, where the record cache
folds most updates, while here the state is large, a standby replicates every write and commits are
transactional. At half of it (47k records/s in the 10M run of 2026-11-27) streams_rt fell behind before
the kill, and the figure measured a backlog, not a recovery (at 17k records/s its micro-batches took
4.5 s). At 8,000 records/s, with 1M keys of state, they took about 0.7 s before the kill.

Control: streams_rt with one standby once more, with the kill skipped: the same figure for the same
second's records when nothing fails. What the failover with a standby adds is its figure less this
one. With a Spark partition per task (before 2026-11-28's change to one per host) that was 0-0.33 s
(with the kill 1,022-1,346 ms, without 1,017-1,132 ms): the takeover (0.4-0.5 s) hid inside the long
micro-batches in flight. With a partition per host the micro-batches take about half as long, the
control fell to 382-410 ms, and the failover adds 0.05-0.4 s (with the kill 435-782 ms in five runs,
one outlier of 1,309 ms): the takeover itself (the host removed 0.1 s after the kill, the standbys
promoted 0.1 s after the new generation, running 0.05 s later) shows.

Guarantee: streams_rt and Kafka Streams run exactly_once_v2 here. At least once, a killed worker's
last updates are in its changelog but not its committed input offsets, so the task's new owner counts
them again: the counts come out too high, which the output check rightly refuses (the 10M run of
2026-11-27 lost two of the four rows to it)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.peers.latency import WARM_UP_S, Feed, LatencyTracker, feed
from bench.peers.processes import SystemProcesses, descendants
from bench.peers.systems import APPS, KSTREAMS_BUILD, QUIET_JAVA, QUIX_PYTHON, Run, environment
from bench.peers.workload import OutputWatch, bulk_producer, create_topics, wait_for_output

KILL_AFTER_S = 10.0  # into the timed part of the feed
DEFAULT_RATE = 8_000.0  # records/s: see the docstring
AFTER_KILL_MS = 1000.0  # the records whose latency makes the figure: produced this soon after the kill
CATCH_UP_S = 120.0
GUARANTEE = "exactly_once_v2"  # see the docstring
DEFAULT_RECOVERY_LAG = 10_000  # acceptable.recovery.lag, Kafka's default (passed only to reach the next argument)
STATE_KEY = "ks{:07d}"  # the preloaded state's keys: outside the feed's (key_name), so neither timed nor checked
SPARK_CLUSTER = "local-cluster[2,1,1024]"


@dataclass(frozen=True)
class Failover:
    system: str
    standbys: int | None  # None: the system has no standbys
    commands: Callable[[Run], list[list[str]]]
    victim: Callable[[SystemProcesses], int] | None  # the pid to kill; None: the control, nothing killed


def _streams_rt(standbys: int) -> Callable[[Run], list[list[str]]]:
    def commands(run: Run) -> list[list[str]]:
        return [[sys.executable, str(APPS / "streams_rt_app.py"), run.bootstrap, run.source, run.sink, str(run.work),
                 str(max(1, run.batch_records // 4)), "--standbys", str(standbys), "--guarantee", GUARANTEE]]
    return commands


def _task_host(procs: SystemProcesses) -> int:
    """One of streams_rt's task hosts (`python -m streams_rt.iq.host_main`, the host with its query
    server; matched as `host_main`, so a host started by the other entry point counts too)."""
    return _descendant(procs, b"host_main", "streams_rt task host")


def _descendant(procs: SystemProcesses, marker: bytes, what: str) -> int:
    """The first process (lowest pid) of the system whose command line holds `marker`."""
    for pid in sorted(descendants([p.pid for p in procs.procs])):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker in command:
            return pid
    raise RuntimeError(f"no {what} found")


def _kafka_streams(standbys: int) -> Callable[[Run], list[list[str]]]:
    def commands(run: Run) -> list[list[str]]:
        classpath = f"{KSTREAMS_BUILD / 'peers-kstreams-1.jar'}:{KSTREAMS_BUILD / 'libs'}/*"
        app_id = f"peers-failover-{uuid.uuid4().hex[:6]}"
        return [["java", "-Xmx1g", QUIET_JAVA, "-cp", classpath, "peers.CountSum", run.bootstrap, run.source, run.sink,
                 app_id, str(run.work / f"state-{i}"), "1", str(standbys), str(DEFAULT_RECOVERY_LAG), GUARANTEE]
                for i in range(2)]
    return commands


def _quix(run: Run) -> list[list[str]]:
    group = f"peers-quix-failover-{uuid.uuid4().hex[:6]}"
    return [[str(QUIX_PYTHON), str(APPS / "quix_app.py"), run.bootstrap, run.source, run.sink,
             str(run.work / f"state-{i}"), group] for i in range(2)]


def _second(procs: SystemProcesses) -> int:
    return procs.procs[1].pid


def _spark_sql(run: Run) -> list[list[str]]:
    return [[sys.executable, str(APPS / "spark_apps.py"), "sql", run.bootstrap, run.source, run.sink, str(run.work),
             str(run.batch_records), SPARK_CLUSTER]]


def _executor(procs: SystemProcesses) -> int:
    """One of Spark's executor JVMs (CoarseGrainedExecutorBackend)."""
    return _descendant(procs, b"CoarseGrainedExecutorBackend", "Spark executor")


FAILOVERS = [
    Failover("streams_rt", 1, _streams_rt(1), _task_host),
    Failover("streams_rt", 0, _streams_rt(0), _task_host),
    Failover("streams_rt", 1, _streams_rt(1), None),
    Failover("Kafka Streams", 1, _kafka_streams(1), _second),
    Failover("Kafka Streams", 0, _kafka_streams(0), _second),
    Failover("Quix Streams", None, _quix, _second),
    Failover("Spark SQL groupBy().agg()", None, _spark_sql, _executor),
]


def preload_state(bootstrap: str, topic: str, records: int) -> None:
    """`records` records of `records` keys of their own (STATE_KEY), partitioned as the feed's."""
    producer = bulk_producer(bootstrap)
    for i in range(records):
        while True:
            try:
                producer.produce(topic, b"1", STATE_KEY.format(i).encode())
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush()


def measure(failover: Failover, run: Run, keys: int, rate: float, seconds: float,
            state_records: int = 0) -> tuple[float, str]:
    """(the worst latency in ms of the records produced in the second after the kill, a note);
    NaN when the output is wrong or incomplete. The control (no victim) times the same second with
    nothing killed."""
    run.work.mkdir(parents=True)
    create_topics(run.bootstrap, run.source, [run.sink])
    preload_state(run.bootstrap, run.source, state_records)
    feed_state = Feed(keys)
    tracker = LatencyTracker(feed_state)
    procs = SystemProcesses(failover.commands(run), environment(), run.work / "system.log")
    watch = OutputWatch(run.bootstrap, run.sink, on_output=tracker)
    killed: list[float] = []

    def kill_when_due() -> None:
        while not feed_state.timed_from_ms or time.time() * 1000 < feed_state.timed_from_ms + KILL_AFTER_S * 1000:
            time.sleep(0.05)
        victim = None if failover.victim is None else failover.victim(procs)
        killed.append(time.time() * 1000)
        if victim is not None:
            os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_due, daemon=True)  # waits for the feed's timed part
    killer.start()
    try:
        fed = feed(run.bootstrap, run.source, feed_state, rate, max(seconds, KILL_AFTER_S + 10),
                   lambda: watch.end_offset() > state_records, ready_timeout_s=300 + state_records / 5_000)
        killer.join(timeout=WARM_UP_S + KILL_AFTER_S + 30)
        if not fed or not killed:
            return float("nan"), "never ready or never killed"
        feed_state.timed_from_ms, feed_state.timed_to_ms = killed[0], killed[0] + AFTER_KILL_MS
        alive = lambda: any(p.poll() is None for p in procs.procs)  # noqa: E731
        verified = wait_for_output(watch, feed_state.expected(), CATCH_UP_S, alive)
    finally:
        procs.stop()
        watch.close()
    timed = tracker.timed()
    if not verified or len(tracker.samples) < timed or not timed:
        return float("nan"), f"output wrong or incomplete: {len(tracker.samples):,} of {timed:,} records after the kill"
    when = "after the kill" if failover.victim is not None else "timed (nothing killed)"
    return max(tracker.samples), (f"{timed:,} records in the second {when}, "
                                  f"state of {state_records:,} keys before the feed")
