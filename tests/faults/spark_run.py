"""One fault run on Spark: the smoke application through `StreamsRuntime` on a `local-cluster`
(one task host per executor, started by the runtime and by the reads on executors added later),
a streaming query driving the batches with a checkpoint location, the driver producing meanwhile,
the invariants watched, and the verifier's verdict at the end. The query's own rows go to Spark's
`noop` sink: what is verified is what the application wrote to Kafka (read_committed)."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from streams_rt import StreamsRuntime
from streams_rt.kafka.offsets import end_offsets
from streams_rt.processes import still_running
from streams_rt.protocol import TaskId
from streams_rt.rpc.batches import BatchError, HostClient
from streams_rt.runtime.batch_loop import BatchLoop
from streams_rt.runtime.planning import RUNNING
from streams_rt.spark.executor_hosts import HOST_DIR
from tests.faults import invariants
from tests.faults.driver import Driver, Produced, smoke_workload
from tests.faults.harness import FAST, SummaryRow, create_smoke_topics, final_verdict, settle_group
from tests.faults.smoke_topology import INPUT
from tests.faults.verifier import Verdict

HOSTS_GLOB = f"*/{HOST_DIR}"  # each executor's host directory under the Spark application's work dir


class SparkFaultRun:
    """`start()` (again after `stop_driver()`: a driver restart) runs the runtime and the query;
    `wait_until` polls, failing on a query error, sampling the checkpoints and timing recoveries."""

    def __init__(self, spark: SparkSession, bootstrap: str, work_dir: Path, guarantee: str,
                 records: list[tuple[str, int]] | None = None, duration_s: float = 30.0, **props: Any) -> None:
        self.spark, self.bootstrap, self.work_dir, self.guarantee = spark, bootstrap, work_dir, guarantee
        self.suffix = create_smoke_topics(bootstrap)
        # One ownership log per driver run: a new coordinator numbers its generations from the start
        # again (the hosts of the old one are stopped first), so generations compare within a run only.
        self.ownership_logs: list[Path] = []
        self.properties = {"application.id": f"spark-faults-{uuid.uuid4().hex[:10]}", "bootstrap.servers": bootstrap,
                           "processing.guarantee": guarantee, **FAST, **props}
        self.application_id = str(self.properties["application.id"])
        self.checkpoint_location = work_dir / "spark-checkpoint"
        self.runtime: StreamsRuntime | None = None
        self.query: StreamingQuery | None = None
        self.loop: BatchLoop | None = None  # for the tasks' statuses only: the query runs the batches
        self.starts = 0
        self.start()
        assert self.runtime is not None
        first = self.runtime.start_executor_hosts()[0]  # found again, not started twice
        # Spark's work directory for this application: each executor's directory is under it.
        self.executors_dir: Path = Path(os.readlink(f"/proc/{first['pid']}/cwd")).parent.parent
        self.checkpoints: invariants.CheckpointWatch = invariants.CheckpointWatch(
            self.executors_dir, self.application_id, HOSTS_GLOB)
        self._admin: AdminClient = AdminClient({"bootstrap.servers": bootstrap})
        self.driver: Driver = Driver(bootstrap, f"{INPUT}{self.suffix}", records or smoke_workload(20, 250),
                             duration_s).start()
        self.recovery_s: list[float] = []
        self._waiting: dict[TaskId, tuple[float, int]] = {}  # task -> (fault time, its position then)

    # -- the driver's side -----------------------------------------------------------------------
    def start(self) -> None:
        """The runtime (coordinator, a host per executor) and the query, from the checkpoint location."""
        self.starts += 1
        self.ownership_logs.append(self.work_dir / f"ownership-{self.starts}.log")
        properties = {**self.properties, "task.ownership.log": str(self.ownership_logs[-1])}
        self.runtime = StreamsRuntime(self.spark, "tests.faults.smoke_topology:smoke", properties,
                                      topology_args={"suffix": self.suffix},
                                      work_dir=self.work_dir / f"driver-{self.starts}")
        self.loop = self.runtime.app.loop()
        self.query = (self.runtime.stream().writeStream.format("noop")
                      .option("checkpointLocation", str(self.checkpoint_location))
                      .trigger(processingTime="200 milliseconds").start())

    def stop_driver(self) -> None:
        """The query, the batch-status client and the runtime (coordinator and hosts) go away."""
        if self.query is not None:
            self.query.stop()
        if self.loop is not None:
            self.loop.close()
        if self.runtime is not None:
            self.runtime.stop()
        self.query = self.loop = self.runtime = None

    def restart_driver(self) -> None:
        """A driver (coordinator) restart: everything stops and starts again on the same checkpoint
        location; every task's next output ends its recovery."""
        self.fault(self.statuses())
        self.stop_driver()
        self.start()

    # -- observing -------------------------------------------------------------------------------
    def statuses(self) -> dict[TaskId, Any]:
        assert self.loop is not None
        return self.loop.status()[1]

    def live_hosts(self) -> dict[int, dict[str, Any]]:
        """The ready records of this run's live hosts, by pid (from the executors' host directories)."""
        assert self.runtime is not None
        coordinator = self.runtime.app.coordinator.address
        found = {}
        for path in self.executors_dir.glob(f"{HOSTS_GLOB}/ready.json"):
            try:
                record: dict[str, Any] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if record.get("coordinator") == coordinator and still_running(int(record["pid"]), record.get("started")):
                found[int(record["pid"])] = record
        return found

    def host_statuses(self) -> dict[str, dict[str, Any]]:
        assert self.runtime is not None
        statuses = {}
        for pid, record in self.live_hosts().items():
            try:
                with HostClient(record["endpoint"], secret=self.runtime.app.coordinator.secret, timeout_s=10) as client:
                    statuses[str(pid)] = client.status()
            except BatchError:
                continue
        return statuses

    def tasks_of(self, endpoint: str) -> dict[TaskId, Any]:
        return {t: s for t, s in self.statuses().items() if s.endpoint == endpoint}

    def fault(self, tasks: dict[TaskId, Any]) -> None:
        """A fault hits `tasks` (task -> status) now: their first progress after it ends their recovery."""
        now = time.monotonic()
        for task, status in tasks.items():
            self._waiting.setdefault(task, (now, sum(status.positions.values())))

    def check(self) -> None:
        """One observation: the query has not failed; checkpoints sampled; recoveries timed."""
        assert self.query is not None and self.query.exception() is None, self.query.exception() if self.query else None
        self.checkpoints.sample()
        if not self._waiting:
            return
        now = time.monotonic()
        for task, status in self.statuses().items():
            began = self._waiting.get(task)
            if began is not None and status.phase == RUNNING and sum(status.positions.values()) > began[1]:
                self.recovery_s.append(now - began[0])
                del self._waiting[task]

    def wait_until(self, done: Callable[[], bool], timeout_s: float = 120.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            self.check()
            if done():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not reached within {timeout_s} s: {what}")
            time.sleep(0.25)

    def settle(self, hosts: int = 3, timeout_s: float = 180.0) -> dict[str, tuple[int, int]]:
        assert self.runtime is not None
        return settle_group(self.runtime.app.coordinator.describe, self.wait_until, self.host_statuses, hosts,
                            timeout_s)

    def lag(self) -> int:
        """Input offsets not yet processed, as the tasks' hosts report their positions."""
        statuses = self.statuses()
        tps = [tp for s in statuses.values() for tp in s.inputs]
        ends = end_offsets(self._admin, tps, read_committed=False)
        return sum(max(0, ends[tp] - s.positions.get(tp, 0)) for s in statuses.values() for tp in s.inputs)

    def drain(self, timeout_s: float = 180.0) -> list[Produced]:
        self.wait_until(lambda: self.driver.finished, timeout_s, "the driver to finish")
        produced = self.driver.wait(60)
        self.wait_until(lambda: all(s.phase == RUNNING for s in self.statuses().values()) and self.lag() == 0,
                        timeout_s, "every input record processed")
        return produced

    # -- the end ---------------------------------------------------------------------------------
    def finish(self, fault: str, summary: list[SummaryRow], extra_problems: Collection[str] = ()) -> Verdict:
        """Drain, stop the query and the runtime, check the invariants, verify; the row goes to the
        suite's summary whatever the verdict."""
        produced = self.drain()
        hosts = self.live_hosts()
        self.stop_driver()
        deadline = time.monotonic() + 60
        while any(still_running(pid, h.get("started")) for pid, h in hosts.items()) and time.monotonic() < deadline:
            time.sleep(0.2)
        problems = list(extra_problems)
        problems += [f"host {pid} still running after the application stopped" for pid, h in hosts.items()
                     if still_running(pid, h.get("started"))]
        for ownership_log in self.ownership_logs:
            problems += invariants.ownership_violations(ownership_log)
        problems += self.checkpoints.violations
        problems += invariants.stale_task_locks(self.executors_dir, self.application_id, (), HOSTS_GLOB)
        verdict = final_verdict(self.bootstrap, self.guarantee, self.suffix, self.application_id, produced, problems)
        summary.append(SummaryRow(fault, self.guarantee, verdict, self.recovery_s))
        return verdict

    def close(self) -> None:
        """After a failure: stop everything (closing twice is fine)."""
        self.stop_driver()
