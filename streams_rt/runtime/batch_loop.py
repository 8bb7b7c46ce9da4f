"""A small batch loop that drives hosts the way the Spark data source does, without Spark: ask the
coordinator which tasks run where, plan the next batch for the RUNNING ones, run each on its owner
host, and commit. Tests and benchmarks use it; it is not a stand-in for Spark in Spark's tests."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
from confluent_kafka.admin import AdminClient

from streams_rt.kafka.offsets import BrokerUnreachable, end_offsets
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.batches import BatchError, BatchRequest, HostClient
from streams_rt.rpc.client import CoordinatorUnavailable, GroupClient
from streams_rt.rpc.messages import (
    ReportUnreachableRequest,
    ReportUnreachableResponse,
    TaskStatusRequest,
    TaskStatusResponse,
)
from streams_rt.rpc.tasks import TaskStatus, parse_statuses
from streams_rt.runtime.planning import RUNNING, PlannedBatch, latest_positions, plan

log = logging.getLogger(__name__)
BROKER_WAIT_S = 10.0  # how long a round (or a micro-batch's planning) waits for the broker's end offsets


class BrokerOutageLog:
    """One warning when the broker stops answering the planner and one when it answers again,
    not one per round."""

    def __init__(self) -> None:
        self.since: float | None = None

    def down(self, error: BrokerUnreachable) -> None:
        """The message, not the exception, goes to the log: a handler that keeps records (pytest's
        does for a whole run) would keep its traceback's frames and their Kafka clients alive."""
        if self.since is None:
            log.warning("%s: no new batches until it answers (asked again every round)", str(error))
            self.since = time.monotonic()

    def up(self) -> None:
        if self.since is not None:
            log.warning("the broker answers again after %.1f s: new batches are planned",
                        time.monotonic() - self.since)
            self.since = None


class CoordinatorRefused(RuntimeError):
    pass


@dataclass
class BatchResult:
    """One round: the output of every task that ran, records processed per task, and the tasks
    that did not run (refused or unavailable, with the reason's code)."""

    outputs: dict[TaskId, pa.Table] = field(default_factory=dict)
    records: dict[TaskId, int] = field(default_factory=dict)
    refused: dict[TaskId, str] = field(default_factory=dict)

    @property
    def total_records(self) -> int:
        return sum(self.records.values())

    def rows(self) -> pa.Table | None:
        tables = [t for t in self.outputs.values() if t.num_rows]
        return pa.concat_tables(tables) if tables else None


def task_status(client: GroupClient, application_id: str) -> tuple[int, dict[TaskId, TaskStatus]]:
    response = client.call(TaskStatusRequest(group_id=application_id), TaskStatusResponse)
    if response.error != "NONE":
        raise CoordinatorRefused(f"task_status: {response.error}: {response.message}")
    return response.generation, parse_statuses(response.tasks)


def report_unreachable(client: GroupClient, application_id: str, endpoint: str, generation: int) -> None:
    """Tell the coordinator that the host at `endpoint` could not be reached (BatchError
    UNREACHABLE), so it can check and remove a dead host before its session times out. Advisory:
    a report that fails is logged, never raised (the session timeout still covers the host)."""
    request = ReportUnreachableRequest(group_id=application_id, endpoint=endpoint, generation=generation)
    try:
        response = client.call(request, ReportUnreachableResponse)
    except CoordinatorUnavailable as e:
        log.info("could not report %s unreachable: %s", endpoint, e)
        return
    if response.error != "NONE":
        log.info("report of %s unreachable refused: %s: %s", endpoint, response.error, response.message)


class BatchLoop:
    def __init__(self, coordinator_address: str, application_id: str, bootstrap_servers: str,
                 max_records_per_task: int | None = 100_000, parallelism: int = 8,
                 secret: SharedSecret | None = None, tls_root_certs: bytes | None = None) -> None:
        self.application_id = application_id
        self.max_records_per_task = max_records_per_task
        self.positions: dict[TopicPartition, int] = {}  # where each input partition's next batch starts
        # Batches that could not run: fixed once planned (as Spark's offset log fixes them), so they
        # are asked for again, with the same ranges, from the task's owner at that time.
        self.pending: dict[TaskId, PlannedBatch] = {}
        # Numbers the batches run_once plans, as Spark numbers micro-batches: a task's commit records
        # the number of the batch it applied (interactive queries report it).
        self.batch_id = -1
        self._secret, self._roots = secret, tls_root_certs
        self._coordinator = GroupClient(coordinator_address, secret=secret, tls_root_certs=tls_root_certs)
        self._admin = AdminClient({"bootstrap.servers": bootstrap_servers})
        self._hosts: dict[str, HostClient] = {}
        self._pool = ThreadPoolExecutor(parallelism, thread_name_prefix="batch-loop")
        self._outage = BrokerOutageLog()

    def status(self) -> tuple[int, dict[TaskId, TaskStatus]]:
        return task_status(self._coordinator, self.application_id)

    def run_once(self) -> BatchResult:
        generation, statuses = self.status()
        running = {t: s for t, s in statuses.items() if s.phase == RUNNING and s.endpoint}
        for status in running.values():
            for tp in status.inputs:
                if tp not in self.positions and tp in status.positions:
                    self.positions[tp] = status.positions[tp]
        retries = [PlannedBatch(t, s.endpoint or "", generation, self.pending[t].ranges, self.pending[t].batch_id)
                   for t, s in running.items() if t in self.pending]
        fresh = {t: s for t, s in running.items() if t not in self.pending}
        try:
            ends = end_offsets(self._admin, [tp for s in fresh.values() for tp in s.inputs], BROKER_WAIT_S)
            self._outage.up()
        except BrokerUnreachable as e:  # no new batches this round; the broker is asked again next round
            self._outage.down(e)
            fresh, ends = {}, {}
        latest = latest_positions(self.positions, fresh, ends, self.max_records_per_task)
        self.batch_id += 1
        batches = retries + plan(self.positions, latest, fresh, generation, self.batch_id)
        result = BatchResult()
        for batch, outcome in zip(batches, self._pool.map(self._run, batches), strict=True):
            if isinstance(outcome, BatchError):
                result.refused[batch.task] = outcome.code
                self.pending[batch.task] = batch
                continue
            self.pending.pop(batch.task, None)
            result.outputs[batch.task] = outcome
            result.records[batch.task] = batch.records
            for tp, (_, end) in batch.ranges.items():
                self.positions[tp] = end
        return result

    def _run(self, batch: PlannedBatch) -> pa.Table | BatchError:
        client = self._hosts.get(batch.endpoint) or self._hosts.setdefault(
            batch.endpoint, HostClient(batch.endpoint, secret=self._secret, tls_root_certs=self._roots))
        request = BatchRequest(batch.task, batch.generation, batch.ranges, batch.batch_id)
        try:
            table = client.run_batch(request)
            client.commit(request)
            return table
        except BatchError as e:
            if not e.retriable:
                raise
            log.info("task %s: batch not run now: %s", batch.task, e)
            if e.code == "UNREACHABLE":
                report_unreachable(self._coordinator, self.application_id, batch.endpoint, batch.generation)
            return e

    def lag(self, statuses: Mapping[TaskId, TaskStatus]) -> int:
        """Offsets between the loop's positions and the input partitions' high watermarks: 0 only
        once everything written (transactions whose markers are still on their way included) has
        been processed."""
        tps = [tp for s in statuses.values() for tp in s.inputs]
        ends = end_offsets(self._admin, tps, read_committed=False)
        return sum(max(0, ends[tp] - self.positions.get(tp, 0)) for tp in tps)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for client in self._hosts.values():
            client.close()
        self._coordinator.close()
        # Destroyed now (closing twice is fine): a Kafka client left alive keeps reconnecting to a
        # broker that is gone, and logs every attempt.
        if hasattr(self, "_admin"):
            del self._admin
