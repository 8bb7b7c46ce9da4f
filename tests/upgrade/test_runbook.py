"""Executes docs/operations/rolling-upgrade.md against a live application: word count on Spark
`local-cluster[3,1,1024]` (one task host per executor), `num.standby.replicas=1`, exactly_once_v2,
a producer running throughout. The application starts "on the old release" (every host a stand-in
that speaks metadata version 10 and EAGER, `ReleaseStandIn`); `$OLD_PYTHON` is an interpreter that
starts hosts as that stand-in, `$NEW_PYTHON` this one.

Each step's commands run as an operator runs them (`streams-rt ...` subprocesses), in the runbook's
order; after every step the test checks the ownership log (never two active owners of a task at one
generation), each step's longest output gap (at most the session timeout plus one batch), and what the
step promises: the canary's fair share, EAGER during the first bounce and COOPERATIVE after the
second, version probing and convergence to the new version, the wrong downgrade safe and stable. At
the end the counts equal the reference computed from every line the broker acknowledged."""

from __future__ import annotations

import collections
import logging
import math
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from streams_rt import StreamsRuntime
from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.offsets import end_offsets
from streams_rt.protocol import LATEST_SUPPORTED_VERSION, RebalanceProtocol
from streams_rt.rpc.client import GroupClient
from streams_rt.runtime.batch_loop import task_status
from streams_rt.tasks import ownership_log
from streams_rt.tasks.release_stand_in import ReleaseStandIn
from tests.cli.helpers import streams_rt
from tests.upgrade.runbook import Step, steps

pytestmark = [pytest.mark.local_cluster, pytest.mark.broker, pytest.mark.upgrade_runbook]

EXECUTORS = 3
PARTITIONS = 4
OLD = ReleaseStandIn(LATEST_SUPPORTED_VERSION - 1, RebalanceProtocol.EAGER)
FROM = "2.3"  # the upgrade.from of a release that rebalances EAGER
TRIGGER_S = 1.0
# Static membership, as the runbook advises: a host restarted in place keeps its tasks, no rebalance.
# The session timeout, which a restart must stay within, is set from a measured restart (below).
FAST = {"group.instance.id": "runbook", "heartbeat.interval.ms": 300,
        "commit.interval.ms": 500, "max.poll.interval.ms": 30_000,
        "num.standby.replicas": 1,
        "processing.guarantee": "exactly_once_v2", "probing.rebalance.interval.ms": 60_000}
# Every block of the runbook, by name: the test runs all but the manual ones
# (test_release_stand_in checks that the runbook has exactly these).
EXPECTED_STEPS = ["before", "canary", "canary-rollback", "first-bounce", "after-first-bounce", "second-bounce",
                  "done", "one-bounce", "toggle", "wrong-downgrade", "wrong-downgrade-recovery", "recovered",
                  "rollback-first", "rollback-checked", "rollback-second", "rolled-back", "driver-restart",
                  "automated"]
MANUAL = {"one-bounce", "toggle", "driver-restart", "automated"}


def session_timeout_s() -> float:
    """A session timeout that a host restarted in place stays within on this machine as loaded now: a
    restart is a new interpreter importing the host (`os.execve`), then the host opening its stores
    and rejoining; four times the slower of two cold imports, and never under 6 s. A constant tuned
    on a quiet machine expired under load (a load average of 9 made the canary's restart outlast 6 s,
    and the group rebalanced)."""
    starts = []
    for _ in range(2):
        began = time.monotonic()
        subprocess.run([sys.executable, "-c", "import streams_rt.tasks.host_main"], check=True,
                       cwd=Path(__file__).resolve().parents[2])
        starts.append(time.monotonic() - began)
    return max(6.0, math.ceil(4 * max(starts)))


@pytest.fixture(scope="module")
def cluster(_spark_sessions: Any) -> SparkSession:
    """Spark with three executor JVMs (one task host each), waited for: Spark waits 30 s only."""
    session: SparkSession = _spark_sessions.get(f"local-cluster[{EXECUTORS},1,1024]")
    deadline = time.monotonic() + 120
    while session.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1 < EXECUTORS:
        assert time.monotonic() < deadline, f"{EXECUTORS} executors did not register within 120 s"
        time.sleep(0.5)
    return session


class Lines:
    """Produces word-count lines at a steady pace until stopped; `acknowledged` is every line the
    broker took (the reference is computed from it)."""

    def __init__(self, bootstrap: str, topic: str, per_second: float = 20.0) -> None:
        self.bootstrap, self.topic, self.pace = bootstrap, topic, 1.0 / per_second
        self.acknowledged: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._number = 0

    def start(self) -> Lines:
        """Starts producing (again, after a stop: the lines go on where they stopped)."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="runbook-lines", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[str]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
        return self.acknowledged

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5})
        number = self._number
        while not self._stop.is_set():
            text = " ".join(f"w{(number * 7 + j) % 13}" for j in range(number % 4 + 1))

            def delivered(error: object, _message: object, text: str = text) -> None:
                if error is None:
                    self.acknowledged.append(text)

            producer.produce(self.topic, text.encode(), f"line-{number}".encode(), on_delivery=delivered)
            producer.poll(0)
            number += 1
            time.sleep(self.pace)
        self._number = number
        assert producer.flush(60) == 0


@dataclass
class Output:
    """What the query's micro-batches delivered: the latest count per word, and when batches with
    rows arrived (the output gaps)."""

    counts: dict[str, int] = field(default_factory=dict)
    arrivals: list[float] = field(default_factory=list)
    calls: list[float] = field(default_factory=list)
    batches: list[tuple[float, int, int]] = field(default_factory=list)  # wall time, batch id, rows
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    def take(self, frame: DataFrame, batch_id: int) -> None:
        try:
            rows = frame.select("key", "value").collect()
        except Exception:
            # query.stop() cancelled the batch's job under us. The batch must fail (returning would
            # let Spark commit a batch some tasks never ran), but briefly: the Py4J error's long
            # message would go through Spark's StreamExecution.PROXY_ERROR regex
            # ("((.|\\r\\n|\\r|\\n)*)"), which recurses once per character and kills the stream
            # thread with a StackOverflowError.
            if self.stopping.is_set():
                raise InterruptedError("the query is stopping: its batch was cancelled") from None
            raise
        with self.lock:
            for row in rows:
                self.counts[row.key] = max(self.counts.get(row.key, 0), row.value)
            self.calls.append(time.monotonic())
            self.batches.append((time.time(), batch_id, len(rows)))
            if rows:
                self.arrivals.append(self.calls[-1])

    def usual_batch(self, until: float, window_s: float = 60.0) -> float:
        """One batch as batches went before `until` (a monotonic time): the median time from one
        micro-batch's output to the next's over the minute before, rows or not."""
        with self.lock:
            calls = [t for t in self.calls if until - window_s <= t <= until]
        return statistics.median([b - a for a, b in zip(calls, calls[1:], strict=False)] or [0.0])

    def longest_gap(self, since: float) -> float:
        """The longest time without rows from the last output before `since` (a monotonic time) to now."""
        with self.lock:
            before = [t for t in self.arrivals if t < since][-1:]
            times = [*before, *(t for t in self.arrivals if t >= since), time.monotonic()]
        return max((b - a for a, b in zip(times, times[1:], strict=False)), default=0.0)


class Probes(logging.Handler):
    """The coordinator's log lines about metadata versions (it runs in this process)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Live:
    """The application and what watches it. The driver's part (runtime: coordinator and hosts; the
    query, on a checkpoint location) can crash and start again (`crash_driver`, `start_driver`)."""

    cluster: SparkSession
    config: dict[str, Any]
    topics: dict[str, str]
    work: Path
    output: Output
    lines: Lines
    probes: Probes
    values: dict[str, str]
    runtime: StreamsRuntime = field(init=False)
    query: StreamingQuery = field(init=False)
    ownership: Path = field(init=False)
    host_logs: list[Path] = field(init=False)
    runs: int = 0
    figures: dict[str, Any] = field(default_factory=dict)

    def start_driver(self, release_stand_in: ReleaseStandIn | None, **properties: Any) -> None:
        """The runtime (a new coordinator, a host per executor from its settings) and the query on
        the same checkpoint location. Each driver run gets its own ownership log: a coordinator
        numbers its generations afresh."""
        self.runs += 1
        self.ownership = self.work / f"ownership-{self.runs}.log"
        config = {**self.config, **properties, "task.ownership.log": str(self.ownership)}
        self.runtime = StreamsRuntime(self.cluster, "examples.word_count:topology", config,
                                      topology_args=self.topics, work_dir=self.work / f"runtime-{self.runs}",
                                      release_stand_in=release_stand_in)
        self.output.stopping.clear()
        self.query = (self.runtime.stream().writeStream.foreachBatch(self.output.take)
                      .option("checkpointLocation", str(self.work / "checkpoint"))
                      .trigger(processingTime=f"{int(TRIGGER_S * 1000)} milliseconds").start())
        self.host_logs = [Path(f"/proc/{h['pid']}/cwd/host.log").resolve()
                          for h in self.runtime.start_executor_hosts()]

    def crash_driver(self) -> None:
        """The driver goes away without stopping its hosts: the query stops, the coordinator closes
        (and the executor watcher with it); the hosts keep running, cut off from it."""
        self.output.stopping.set()
        self.query.stop()
        self.runtime.stop(keep_hosts=True)

    def stop(self) -> None:
        self.lines.stop()
        self.output.stopping.set()
        self.query.stop()
        self.runtime.stop()

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = self.runtime.app.coordinator.status()
        return status

    def wait(self, check: Callable[[dict[str, Any]], bool], what: str, timeout_s: float = 90.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.query.exception() is None, f"the query failed waiting for {what}: {self.query.exception()}"
            status = self.status()
            if check(status):
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not reached within {timeout_s:.0f} s: {brief(status)}")
            time.sleep(0.5)


def brief(status: Mapping[str, Any]) -> str:
    hosts = [f"{h['name']} v{h['version']}/{h['latest_supported_version']} {h['rebalance_protocol']} "
             f"active={h['active']} warmup={h['warmup']}" for h in status["hosts"]]
    return f"group {status['state']} gen {status['generation']} {status['protocol']}; " + "; ".join(hosts)


def settled(status: Mapping[str, Any]) -> bool:
    """Stable, three hosts, every task running, no warm-ups pending."""
    return (status["state"] == "STABLE" and len(status["hosts"]) == EXECUTORS
            and all(t["state"] == "RUNNING" for t in status["tasks"]) and not any(h["warmup"] for h in status["hosts"]))


def all_hosts(version: int, latest: int, protocol: str) -> Callable[[dict[str, Any]], bool]:
    return lambda s: settled(s) and all(
        (h["version"], h["latest_supported_version"], h["rebalance_protocol"]) == (version, latest, protocol)
        for h in s["hosts"])


@pytest.fixture(scope="module")
def live(cluster: SparkSession, kafka_broker: BrokerInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    work = tmp_path_factory.mktemp("runbook")
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topics = {"lines": f"rb-lines-{suffix}", "counts": f"rb-counts-{suffix}"}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics.values()]).values():
        future.result()
    app, state_dir = f"runbook-{suffix}", work / "driver"
    old_python = work / "old-release" / "bin" / "python"
    old_python.parent.mkdir(parents=True)
    environment = " ".join(f"{k}={v}" for k, v in OLD.environment().items())
    old_python.write_text(f'#!/bin/sh\nexport {environment}\nexec "{sys.executable}" "$@"\n')
    old_python.chmod(0o755)
    probes = Probes()
    logging.getLogger("streams_rt.coordinator.streams_round").addHandler(probes)
    logging.getLogger("streams_rt.coordinator.streams_round").setLevel(logging.INFO)
    config = {"application.id": app, "bootstrap.servers": bootstrap, "state.dir": str(state_dir), **FAST,
              "session.timeout.ms": int(session_timeout_s() * 1000),
              "host.restart.allowed.interpreters": f"{old_python},{sys.executable}"}  # the runbook's "You need"
    values = {"APP": app, "STATE_DIR": str(state_dir), "NEW_PYTHON": sys.executable, "OLD_PYTHON": str(old_python),
              "FROM": FROM}
    live = Live(cluster, config, topics, work, Output(), Lines(bootstrap, topics["lines"]).start(), probes, values)
    live.start_driver(OLD)
    try:
        yield live
    finally:
        live.stop()
        logging.getLogger("streams_rt.coordinator.streams_round").removeHandler(probes)


def test_the_runbook_upgrades_canaries_and_rolls_back_a_live_application(live: Live) -> None:
    old = OLD.latest_supported_version
    live.wait(all_hosts(old, old, "EAGER"), "the application on the old release")
    live.wait(lambda s: bool(live.output.arrivals), "the first output")
    checks = StepChecks(live)
    for step in steps():
        if step.manual:
            continue
        targets = checks.targets(step)
        for host in targets:
            started = time.monotonic()
            run_step(live, step, host)
            checks.after(step, host, last=host == targets[-1], started=started)
    produced = counts_equal_the_reference(live)
    print(f"\nrunbook figures: longest output gap {checks.longest_gap:.1f} s (bound {checks.longest_gap_bound:.1f} s) "
          f"at {checks.longest_gap_step}, gaps/bounds per step {live.figures['gaps']}, "
          f"canary share {live.figures['canary_share']}, {len(produced)} lines, commands {live.figures['commands']}")
    print(f"the 30 s before that step's check:\n{live.figures['longest gap timeline']}")


def timeline(live: Live, last_s: float = 60.0) -> str:
    """The last minute's micro-batches (rows each) and rebalances, in time order: what a failed gap
    check needs to be understood."""
    since = time.time() - last_s
    with live.output.lock:
        events = [(at, f"batch {batch}: {rows} rows") for at, batch, rows in live.output.batches if at >= since]
    for rebalance in live.status()["rebalances"]:
        moved = ", ".join(f"{m['task']} {m['kind']} {m['from']}->{m['to']}" for m in rebalance["moves"])
        if rebalance["formed_ms"] / 1000 >= since:
            events.append((rebalance["started_ms"] / 1000, f"generation {rebalance['generation']} round started "
                           f"({rebalance['reason']})"))
            events.append((rebalance["formed_ms"] / 1000, f"generation {rebalance['generation']} formed: {moved}"))
    return "\n".join(f"{time.strftime('%H:%M:%S', time.localtime(at))}.{int(at % 1 * 1000):03d} {what}"
                     for at, what in sorted(events))


def test_a_driver_restart_during_the_first_bounce(live: Live) -> None:
    """The runbook's "driver restarts during an upgrade" (runs after the test above, which leaves every
    host on the old release): one host through the first bounce, then the driver crashes (the query
    and the coordinator go, the hosts stay cut off) and starts again as the runbook says, on the new
    release without upgrade.from. Every host of the old run is replaced, the group is at once at the
    new version and COOPERATIVE, no task has two owners, and the counts continue exactly from the
    checkpoint."""
    old, new = OLD.latest_supported_version, LATEST_SUPPORTED_VERSION
    by_name = {step.name: step for step in steps()}
    live.lines.start()
    live.wait(all_hosts(old, old, "EAGER"), "the application on the old release")
    first = live.status()["hosts"][0]["name"]
    run_step(live, by_name["first-bounce"], first)
    live.wait(lambda s: settled(s) and any(h["latest_supported_version"] == new for h in s["hosts"]),
              "one host on the new release")
    before = {h["name"] for h in live.status()["hosts"]}
    live.crash_driver()
    restarted = time.monotonic()
    live.start_driver(None)
    status = live.wait(all_hosts(new, new, "COOPERATIVE"), "every host replaced by one of the new release",
                       timeout_s=180)
    assert not before & {h["name"] for h in status["hosts"]}, brief(status)
    run_step(live, by_name["driver-restart"], first)
    try:
        live.wait(lambda s: bool(live.output.arrivals) and live.output.arrivals[-1] > restarted,
                  "output from the restarted driver")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{stuck_batch(live)}") from None
    resumed = live.output.arrivals[-1]
    produced = counts_equal_the_reference(live)
    for log in sorted(live.work.glob("ownership-*.log")):
        assert not ownership_log.check(ownership_log.read(log)), log
    print(f"\ndriver restart figures: {resumed - restarted:.1f} s from the crash to the first output, "
          f"{len(produced)} lines in all")


def stuck_batch(live: Live) -> str:
    """What a batch that does not finish needs to be understood: each task's committed positions
    (the coordinator's view) against the topics' ends (read_committed and not), and Spark's last
    planned and committed offsets."""
    with GroupClient(live.runtime.app.coordinator.address, secret=live.runtime.app.coordinator.secret) as client:
        generation, statuses = task_status(client, str(live.config["application.id"]))
    admin = AdminClient({"bootstrap.servers": live.config["bootstrap.servers"]})
    inputs = [tp for s in statuses.values() for tp in s.inputs]
    committed, uncommitted = end_offsets(admin, inputs), end_offsets(admin, inputs, read_committed=False)
    lines = [f"generation {generation}"]
    for task, status in sorted(statuses.items()):
        lines.append(f"{task} {status.phase} {status.endpoint}: " + ", ".join(
            f"{tp}@{status.positions.get(tp)} (end {committed[tp]}/{uncommitted[tp]})" for tp in status.inputs))
    for log in ("offsets", "commits"):
        files = sorted((live.work / "checkpoint" / log).glob("[0-9]*"), key=lambda f: int(f.name))
        lines += [f"{log}/{f.name}: {f.read_text().splitlines()[-1]}" for f in files[-2:]]
    return "\n".join(lines)


def counts_equal_the_reference(live: Live) -> list[str]:
    """Stops the producer and waits until the sink's counts equal the reference computed from every
    line the broker acknowledged (which it returns)."""
    produced = live.lines.stop()
    reference = dict(collections.Counter(w for text in produced for w in text.split()))
    deadline = time.monotonic() + 120
    while live.output.counts != reference and time.monotonic() < deadline:
        time.sleep(0.5)
    assert live.output.counts == reference
    return produced


def run_step(live: Live, step: Step, host: str) -> None:
    """One runbook step's commands for `host`, as an operator runs them; its expected text checked."""
    printed = []
    for argv in step.argv({**live.values, "HOST": host}):
        started = time.monotonic()
        result = streams_rt(*argv[1:], timeout=300)
        assert result.returncode == 0, f"{step.name} ({host}): {' '.join(argv)}\n{result.stderr}"
        printed.append(result.stdout)
        live.figures.setdefault("commands", []).append((step.name, round(time.monotonic() - started, 1)))
    missing = [text for text in step.expect if text not in "".join(printed)]
    assert not missing, f"{step.name} ({host}): {missing} not in\n{''.join(printed)}"


class StepChecks:
    """What the test asserts after each step (see the module docstring)."""

    def __init__(self, live: Live) -> None:
        self.live = live
        self.longest_gap, self.longest_gap_step, self.longest_gap_bound = 0.0, "", 0.0

    def targets(self, step: Step) -> list[str]:
        """$HOST for each run of the step's commands."""
        status = self.live.status()
        names = [h["name"] for h in status["hosts"]]
        if step.each_host:
            return names
        if step.name == "canary-rollback":  # the canary: the one host on the new release
            return [h["name"] for h in status["hosts"] if h["latest_supported_version"] == LATEST_SUPPORTED_VERSION]
        if step.name == "wrong-downgrade-recovery":  # the host on the old release
            return [h["name"] for h in status["hosts"] if h["latest_supported_version"] < LATEST_SUPPORTED_VERSION]
        return names[:1]

    def after(self, step: Step, host: str, last: bool, started: float) -> None:
        """`started`: when the step's commands started (a monotonic time)."""
        live, old, new = self.live, OLD.latest_supported_version, LATEST_SUPPORTED_VERSION
        violations = ownership_log.check(ownership_log.read(live.ownership))
        assert not violations, f"after {step.name} ({host}): {violations[:5]}"
        # The step's gap, whole: measured once output flows again (a gap still open would be cut short).
        done = time.monotonic()
        live.wait(lambda s: bool(live.output.arrivals) and live.output.arrivals[-1] > done,
                  f"output after {step.name} ({host})")
        # The bound: the session timeout plus one batch, as batches went in the minute before the step.
        session_timeout = live.config["session.timeout.ms"] / 1000
        gap, bound = live.output.longest_gap(started), session_timeout + live.output.usual_batch(started)
        live.figures.setdefault("gaps", []).append(f"{gap:.1f}/{bound:.1f}")
        if gap > self.longest_gap:
            self.longest_gap, self.longest_gap_step, self.longest_gap_bound = gap, f"{step.name} ({host})", bound
            live.figures["longest gap timeline"] = timeline(live, last_s=30)
        assert gap <= bound, (f"after {step.name} ({host}): output gap {gap:.1f} s, above the session timeout plus "
                              f"one batch ({bound:.1f} s)\n{timeline(live)}")
        name = step.name
        if name == "canary" or (name == "first-bounce" and not last):
            # Static membership: a host back as it was (the version it spoke, its state and endpoint;
            # reading a newer version changes nothing yet) keeps its tasks, and nobody rebalances.
            started_ms = (time.time() - (time.monotonic() - started)) * 1000
            rounds = [r["reason"] for r in live.status()["rebalances"] if r["started_ms"] >= started_ms]
            assert not rounds, f"{name} ({host}) rebalanced: {rounds}"
        if name == "canary":
            status = live.wait(lambda s: settled(s) and any(
                h["latest_supported_version"] == new for h in s["hosts"]), "the canary settled")
            tasks = len(status["tasks"])
            canary = next(h for h in status["hosts"] if h["latest_supported_version"] == new)
            share = len(canary["active"])
            live.figures["canary_share"] = f"{share} of {tasks}"
            assert math.floor(tasks / EXECUTORS) <= share <= math.ceil(tasks / EXECUTORS), brief(status)
            assert (canary["version"], canary["rebalance_protocol"], status["protocol"]) == (old, "EAGER", "EAGER")
        elif name == "canary-rollback":
            live.wait(all_hosts(old, old, "EAGER"), "every host back on the old release")
        elif name == "first-bounce":
            status = live.wait(settled, "a settled group")
            assert status["protocol"] == "EAGER", brief(status)
            if not last:
                assert any(h["version"] == old and h["latest_supported_version"] == new
                           for h in status["hosts"]), brief(status)
            else:
                live.wait(all_hosts(new, new, "EAGER"), "the group converged to the new version, still EAGER")
                # Version probing: once the last host read the new version, a round answered at the old
                # one while advertising the new, and every host (each since its last restart, which
                # resumed at the version its old process spoke) moved up.
                assert any(f"sending assignments at version {old} (commonly supported {new}" in line
                           for line in live.probes.lines), live.probes.lines[-10:]
                logs = [p.read_text(errors="replace").rpartition("restarting as asked")[2] for p in live.host_logs]
                up = f"upgrade subscription version {old} -> {new}"
                assert all(up in text for text in logs), "a host did not move up to the new version"
        elif name == "second-bounce":
            status = live.wait(settled, "a settled group")
            assert status["protocol"] == "COOPERATIVE", brief(status)
            if last:
                live.wait(all_hosts(new, new, "COOPERATIVE"), "every host cooperative at the new version")
        elif name == "wrong-downgrade":
            status = live.wait(lambda s: settled(s) and any(
                h["latest_supported_version"] == old for h in s["hosts"]), "the downgraded host back, stable")
            assert status["protocol"] == "COOPERATIVE", brief(status)
            assert all(h["version"] == old for h in status["hosts"]), brief(status)
        elif name == "wrong-downgrade-recovery":
            live.wait(all_hosts(new, new, "COOPERATIVE"), "every host cooperative at the new version")
        elif name == "rollback-first":
            status = live.wait(settled, "a settled group")
            assert status["protocol"] == ("EAGER" if last else "COOPERATIVE"), brief(status)
        elif name == "rollback-second":
            status = live.wait(settled, "a settled group")
            assert status["protocol"] == "EAGER", brief(status)
            if last:
                live.wait(all_hosts(old, old, "EAGER"), "every host back on the old release")
