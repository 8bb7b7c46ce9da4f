"""Faults of Spark itself, on local-cluster[3,1,1024] with a task host per executor and
num.standby.replicas=1, under exactly_once_v2 with the verifier's exact check:

- kill -9 of an executor JVM (CoarseGrainedExecutorBackend) mid-stream: Spark's standalone worker
  starts a new executor; the old executor's host sees its JVM gone, leaves and releases its task
  locks; the new executor gets a host with its first read; the query never fails;
- a driver (coordinator) restart: the query and the runtime stop, new ones start on the same
  checkpoint location, and the counts continue exactly;
- a decommissioned executor (SIGPWR to its JVM, as Kubernetes' decom.sh sends, with
  spark.decommission.enabled in spark-conf/): the driver's executor watcher sees Spark decommission
  it and drains its host: each active moved to a host caught up on it (its standby, or a warm-up
  first), no task without an owner beyond one cooperative hand-off, and the host stops drained
  (Spark lets the idle executor exit within a second; the drain goes on without it)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.offsets import end_offsets
from streams_rt.processes import still_running
from streams_rt.protocol import TaskId
from streams_rt.runtime.topics import task_changelogs
from streams_rt.tasks import ownership_log
from tests.cli.test_drain import actives_by_generation
from tests.faults import invariants
from tests.faults.driver import smoke_workload
from tests.faults.harness import ACCEPTABLE_RECOVERY_LAG, SummaryRow
from tests.faults.spark_run import HOSTS_GLOB, SparkFaultRun

pytestmark = [pytest.mark.local_cluster, pytest.mark.broker]


class SparkRuns:
    """Fault runs on the shared local-cluster session, each closed at the test's end."""

    def __init__(self, spark: SparkSession, bootstrap: str, tmp_path: Path) -> None:
        self.spark, self.bootstrap, self.tmp_path = spark, bootstrap, tmp_path
        self.made: list[SparkFaultRun] = []

    def start(self, duration_s: float, records: list[tuple[str, int]] | None = None) -> SparkFaultRun:
        run = SparkFaultRun(self.spark, self.bootstrap, self.tmp_path / f"run-{len(self.made)}", "exactly_once_v2",
                            records, duration_s)
        self.made.append(run)
        return run


@pytest.fixture
def spark_runs(spark_cluster_3: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path) -> Iterator[SparkRuns]:
    runs = SparkRuns(spark_cluster_3, kafka_broker.bootstrap_servers, tmp_path)
    yield runs
    for run in runs.made:
        run.close()


def kill_an_executor(run: SparkFaultRun) -> None:
    """kill -9 the executor JVM whose host has the most active tasks, while the query runs; then
    its host must go (releasing its locks), a new executor must get a host, and the group settle
    over three hosts again."""
    hosts = run.live_hosts()
    busiest = max(hosts, key=lambda pid: len(run.tasks_of(hosts[pid]["endpoint"])))
    victim = hosts[busiest]
    executor = int(victim["watch_pid"])
    assert b"CoarseGrainedExecutorBackend" in Path(f"/proc/{executor}/cmdline").read_bytes()
    run.fault(run.tasks_of(victim["endpoint"]))
    os.kill(executor, signal.SIGKILL)
    run.checkpoints.excuse(Path(os.readlink(f"/proc/{busiest}/cwd")).parent.name)  # an unclean stop under EOS
    run.wait_until(lambda: not still_running(busiest, victim.get("started")), 60,
                   f"the host of the killed executor (pid {busiest}) to leave")
    stale = invariants.stale_task_locks(run.executors_dir, run.application_id, set(run.live_hosts()), HOSTS_GLOB)
    assert not stale, stale
    run.wait_until(lambda: len(run.live_hosts()) == 3, 180, "a host on the executor Spark starts in its place")
    watched = {int(h["watch_pid"]) for h in run.live_hosts().values()}
    assert executor not in watched and len(watched) == 3, watched
    run.settle(hosts=3)


@pytest.mark.faults_short
def test_kill_9_of_an_executor_jvm_mid_stream(spark_runs: SparkRuns, summary: list[SummaryRow]) -> None:
    run = spark_runs.start(duration_s=40.0)
    run.settle(hosts=3)
    time.sleep(2)
    kill_an_executor(run)
    verdict = run.finish("kill -9 of an executor JVM", summary)
    assert verdict.passed, verdict.problems
    assert verdict.verified == verdict.produced == 20 * 250
    assert run.recovery_s, "no task of the killed executor's host made progress elsewhere"


@pytest.mark.faults_short
def test_a_driver_restart_from_the_spark_checkpoint(spark_runs: SparkRuns, summary: list[SummaryRow]) -> None:
    run = spark_runs.start(duration_s=30.0)
    run.settle(hosts=3)
    time.sleep(2)
    batches_before = last_batch_id(run)
    run.restart_driver()
    run.settle(hosts=3)
    run.wait_until(lambda: last_batch_id(run) >= 0, 180, "the new query's first micro-batch")
    assert last_batch_id(run) > batches_before, "the new query did not resume from the checkpoint's batches"
    verdict = run.finish("driver restart from the Spark checkpoint", summary)
    assert verdict.passed, verdict.problems
    assert verdict.verified == verdict.produced == 20 * 250


def last_batch_id(run: SparkFaultRun) -> int:
    progress = run.query.lastProgress if run.query is not None else None
    return int(progress["batchId"]) if progress is not None else -1


@pytest.mark.faults
def test_kill_9_of_an_executor_jvm_twice_with_1000_values_per_key(spark_runs: SparkRuns,
                                                                  summary: list[SummaryRow]) -> None:
    run = spark_runs.start(duration_s=60.0, records=smoke_workload(20, 1000))
    run.settle(hosts=3)
    for _ in range(2):
        time.sleep(2)
        kill_an_executor(run)
    verdict = run.finish("kill -9 of an executor JVM x2", summary)
    assert verdict.passed, verdict.problems


@pytest.mark.faults_short
def test_a_decommissioned_executor_has_its_host_drained(spark_runs: SparkRuns, summary: list[SummaryRow]) -> None:
    run = spark_runs.start(duration_s=40.0)
    run.settle(hosts=3)
    time.sleep(2)
    assert run.runtime is not None
    coordinator = run.runtime.app.coordinator
    settled = coordinator.status()
    hosts = run.live_hosts()
    busiest = max(hosts, key=lambda pid: len(run.tasks_of(hosts[pid]["endpoint"])))
    victim = hosts[busiest]
    leaving = next(h for h in settled["hosts"] if h["endpoint"] == victim["endpoint"])
    assert leaving["active"], settled
    host_log = Path(os.readlink(f"/proc/{busiest}/cwd")) / "host.log"
    run.fault(run.tasks_of(victim["endpoint"]))
    os.kill(int(victim["watch_pid"]), signal.SIGPWR)  # Spark's decommission signal, to the executor's JVM only
    seen_draining = False

    def drained_and_gone() -> bool:
        nonlocal seen_draining
        seen_draining |= any(h["draining"] for h in coordinator.status()["hosts"] if h["member"] == leaving["member"])
        return not still_running(busiest, victim.get("started"))

    run.wait_until(drained_and_gone, 180, f"the host of the decommissioned executor (pid {busiest}) to drain and stop")
    text = host_log.read_text(errors="replace")
    assert "drained: every task of this host runs elsewhere now; stopping" in text, text[-3000:]
    assert seen_draining, "the status never showed the host draining"
    # Each active went to a host that was caught up on it (KIP-441, the drain's rule): its standby
    # (num.standby.replicas=1), or a warm-up first, or any host while the task's changelog was still
    # within acceptable.recovery.lag (its end now bounds every host's lag at the drain).
    moves = [m for e in coordinator.status()["rebalances"] if e["generation"] > settled["generation"]
             for m in e["moves"]]
    taken = {m["task"]: m["to"] for m in moves if m["kind"] == "active" and m["to"] is not None}
    warmed = {(m["task"], m["to"]) for m in moves if m["kind"] == "warmup" and m["to"] is not None}
    names = {h["member"]: h["name"] for h in settled["hosts"]}  # moves name hosts as `status` does
    standbys = {t["task"]: {names[m] for m in t["standby"]} for t in settled["tasks"]}
    app = run.runtime.app
    changelogs = task_changelogs(app.topology, app.layout)
    admin = AdminClient({"bootstrap.servers": run.bootstrap})
    for task in leaving["active"]:
        assert task in taken, (task, moves)
        changelog_end = sum(end_offsets(admin, changelogs[TaskId.parse(task)]).values())
        assert (taken[task] in standbys[task] or (task, taken[task]) in warmed
                or changelog_end <= ACCEPTABLE_RECOVERY_LAG), (task, taken[task], standbys[task], changelog_end, moves)
    run.wait_until(lambda: len(run.live_hosts()) == 3, 180, "a host on the executor Spark starts in its place")
    run.settle(hosts=3)
    events = ownership_log.read(run.ownership_logs[-1])
    by_generation = actives_by_generation(events)
    tasks = {t["task"] for t in settled["tasks"]}
    for generation in sorted(g for g in by_generation if g >= settled["generation"]):
        missing = tasks - set().union(*by_generation[generation].values())
        # a task may be missing only while it is handed over: revoked at this generation, owned at the next
        after = by_generation.get(generation + 1)
        assert not missing or (after is not None and missing <= set().union(*after.values())), (generation, missing)
    verdict = run.finish("decommission of an executor (drain)", summary)
    assert verdict.passed, verdict.problems
    assert verdict.verified == verdict.produced == 20 * 250
