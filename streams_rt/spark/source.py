"""The streams_rt streaming data source (`spark.readStream.format("streams_rt")`).

Its driver-side methods run in a Python process Spark starts (not the user's): they reach the
coordinator by RPC, whose address travels in the options. `latestOffset` advances RUNNING tasks and
tasks an owner caught up on them is taking over; `partitions` makes one batch per task with work,
for its owner host, and one Spark partition per host holding its tasks' batches; `read`, on an
executor, asks the owner host for each task's batch (all at once) and yields their Arrow record
batches; `commit` acknowledges the batches to their hosts. With a partition per host rather than per
task, a micro-batch is one wave of Spark tasks wherever Spark has a core per host (a partition per
task gave `local[2]` two waves for four tasks), Spark starts fewer tasks, and each host overlaps its
tasks' Kafka round trips and commits. A task that moves after its batch was planned sits the micro-batch out
(its read yields nothing) rather than hold every other task's output until its new owner runs (a
micro-batch ends when its last partition does): its
records come with its next batch, which its new owner runs from where the task is (see
streams_rt/runtime/planning.py). Only a new owner caught up on the task, which runs it within a
moment, is waited for (refused_batch.py). Offsets are
`{"__batch__": B, "<topic>:<partition>": offset}` over every input partition of every task
(repartition topics included); B numbers the micro-batches as Spark does (see offsets.py) and
travels with each task's batch, so its commit records it."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.spark.offsets import BEFORE_FIRST_BATCH, batch_of, decode_offsets, encode_offsets, next_end

if TYPE_CHECKING:
    from streams_rt.rpc.batches import BatchRequest

log = logging.getLogger(__name__)

NAME = "streams_rt"
SECRET_OPTION = "streams_rt.auth.secret"  # Spark redacts option keys matching "secret" in plans and the UI
RETRY_TIMEOUT_MS = 180_000
TRUSTSTORE_OPTION = "rpc.ssl.truststore.location"
HOST_CONFIG_OPTION = "streams_rt.host.secret.config"  # may hold client credentials: "secret" makes Spark redact it


@dataclass(frozen=True)
class TaskBatch:
    """One task's batch: plain data, pickled by Spark to the executor that reads it."""

    task: str
    endpoint: str
    generation: int
    ranges: tuple[tuple[str, int, int, int], ...]  # (topic, partition, start, end)
    batch_id: int  # Spark's micro-batch (the number its end offset carries)

    def request(self) -> BatchRequest:
        from streams_rt.rpc.batches import BatchRequest

        return BatchRequest(TaskId.parse(self.task), self.generation, self.tp_ranges(), self.batch_id)

    def tp_ranges(self) -> dict[TopicPartition, tuple[int, int]]:
        return {TopicPartition(t, p): (s, e) for t, p, s, e in self.ranges}


@dataclass(frozen=True)
class HostBatches(InputPartition):
    """The batches of one micro-batch planned for one host (`endpoint`; "" for tasks planned while
    they had no owner): one Spark partition."""

    endpoint: str
    batches: tuple[TaskBatch, ...]


def by_host(batches: list[TaskBatch]) -> list[HostBatches]:
    """One partition per planned endpoint, in endpoint order, each with its tasks in plan order."""
    grouped: dict[str, list[TaskBatch]] = {}
    for batch in batches:
        grouped.setdefault(batch.endpoint, []).append(batch)
    return [HostBatches(endpoint, tuple(tasks)) for endpoint, tasks in sorted(grouped.items())]


@dataclass(frozen=True)
class SourceOptions:
    coordinator: str
    application_id: str
    bootstrap_servers: str
    schema: str
    max_records_per_task: int | None
    secret: str | None
    retry_timeout_ms: int
    truststore: str | None  # PEM file the hosts' and the coordinator's TLS certificates lead to
    host_config: str | None  # JSON: what an executor's host starts with (cluster mode)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        try:
            return cls(
                coordinator=options["coordinator"],
                application_id=options["application.id"],
                bootstrap_servers=options["bootstrap.servers"],
                schema=options["schema"],
                max_records_per_task=int(options["max.records.per.task.per.batch"]),
                secret=options.get(SECRET_OPTION),
                retry_timeout_ms=int(options.get("batch.retry.timeout.ms", RETRY_TIMEOUT_MS)),
                truststore=options.get(TRUSTSTORE_OPTION),
                host_config=options.get(HOST_CONFIG_OPTION),
            )
        except KeyError as e:
            raise ValueError(f"the streams_rt source is started by StreamsRuntime.stream(); option {e} is "
                             "missing") from None


def _secret(options: SourceOptions) -> Any:
    from streams_rt.rpc.auth import SharedSecret

    return SharedSecret(options.secret) if options.secret else None


def _roots(options: SourceOptions) -> bytes | None:
    from pathlib import Path

    return Path(options.truststore).read_bytes() if options.truststore else None


class StreamsRtDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SourceOptions.parse(self.options).schema

    def streamReader(self, schema: Any) -> StreamsRtStreamReader:
        return StreamsRtStreamReader(SourceOptions.parse(self.options))


class StreamsRtStreamReader(DataSourceStreamReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._planned: dict[int, list[TaskBatch]] = {}  # micro-batch -> its tasks' batches
        self._coordinator: Any = None
        self._admin: Any = None
        self._outage: Any = None  # a BrokerOutageLog (imported on first use, as the rest of the runtime)
        # Spark asks a new query (not a restarted one) for its initial offset; a restarted one's first
        # batch may be one it ran before, which tasks without new records must replay.
        self._new_query = False
        self._planned_any = False

    # -- driver side (Spark's source process) --------------------------------------------------
    def _clients(self) -> tuple[Any, Any]:
        from confluent_kafka.admin import AdminClient

        from streams_rt.rpc.client import GroupClient

        if self._coordinator is None:
            self._coordinator = GroupClient(self.options.coordinator, secret=_secret(self.options),
                                            tls_root_certs=_roots(self.options))
            self._admin = AdminClient({"bootstrap.servers": self.options.bootstrap_servers})
        return self._coordinator, self._admin

    def _status(self) -> tuple[int, dict[TaskId, Any]]:
        from streams_rt.runtime.batch_loop import task_status

        coordinator, _ = self._clients()
        return task_status(coordinator, self.options.application_id)

    def initialOffset(self) -> dict[str, int]:
        """Where a new query starts: every task's committed position, as its host reports it once
        restored (waiting for the hosts, bounded), else the application's committed offsets, else
        each partition's beginning."""
        from streams_rt.kafka.offsets import committed_or_earliest

        self._new_query = True
        deadline = time.monotonic() + self.options.retry_timeout_ms / 1000
        while True:
            _, statuses = self._status()
            if statuses and all(s.phase == "RUNNING" for s in statuses.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        positions: dict[TopicPartition, int] = {}
        missing = []
        for status in statuses.values():
            for tp in status.inputs:
                if tp in status.positions:
                    positions[tp] = status.positions[tp]
                else:
                    missing.append(tp)
        _, admin = self._clients()
        positions.update(committed_or_earliest(admin, self.options.application_id, missing))
        return encode_offsets(positions, BEFORE_FIRST_BATCH)

    def getDefaultReadLimit(self) -> ReadLimit:
        """`max.records.per.task.per.batch`: counted per task, not over the whole batch."""
        cap = self.options.max_records_per_task
        return ReadMaxRows(cap) if cap else ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        from streams_rt.kafka.offsets import BrokerUnreachable, end_offsets
        from streams_rt.runtime.batch_loop import BROKER_WAIT_S, BrokerOutageLog
        from streams_rt.runtime.planning import advances, latest_positions, reported_behind

        _, statuses = self._status()
        running = {t: s for t, s in statuses.items() if advances(s)}
        _, admin = self._clients()
        self._outage = self._outage or BrokerOutageLog()
        try:
            ends = end_offsets(admin, [tp for s in running.values() for tp in s.inputs], BROKER_WAIT_S)
            self._outage.up()
        except BrokerUnreachable as e:  # nothing new: Spark asks again at its next trigger
            self._outage.down(e)
            return start
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        begin = decode_offsets(start)
        for status in statuses.values():  # tasks added since the query started begin at their positions
            for tp in status.inputs:
                begin.setdefault(tp, status.positions.get(tp, 0))
        latest = latest_positions(begin, running, ends, cap)
        catch_up = latest == begin and bool(self._catching_up(begin, running, reported_behind(begin, running), None))
        return next_end(start, latest, catch_up)

    def _catching_up(self, begin: Mapping[TopicPartition, int], statuses: Mapping[TaskId, Any],
                     candidates: set[TaskId], batch_id: int | None) -> frozenset[TaskId]:
        """Of `candidates`, the tasks that need a batch without new records of their own: their owners,
        asked now, say they are behind `begin` or that `batch_id` (if given) is the batch they applied
        last."""
        from streams_rt.rpc.batches import BatchError, HostClient
        from streams_rt.runtime.planning import needs_batch

        if not candidates:
            return frozenset()
        out: set[TaskId] = set()
        by_host: dict[str, list[TaskId]] = {}
        for task in candidates:
            by_host.setdefault(statuses[task].endpoint, []).append(task)
        for endpoint, tasks in sorted(by_host.items()):
            try:
                with HostClient(endpoint, timeout_s=10, secret=_secret(self.options),
                                tls_root_certs=_roots(self.options)) as client:
                    progress = client.progress()
            except BatchError as e:  # its tasks are moving: their batches come once they run again
                log.info("could not ask %s where its tasks are: %s", endpoint, e)
                continue
            out.update(t for t in tasks if t in progress and needs_batch(progress[t], begin, batch_id))
        return frozenset(out)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[HostBatches]:
        from streams_rt.runtime.planning import RUNNING, plan, reported_behind

        generation, statuses = self._status()
        begin, finish, batch_id = decode_offsets(start), decode_offsets(end), batch_of(end)
        for status in statuses.values():
            for tp in status.inputs:
                begin.setdefault(tp, finish.get(tp, 0))
        idle = {t for t, s in statuses.items() if s.phase == RUNNING and s.endpoint
                and not any(finish.get(tp, 0) > begin[tp] for tp in s.inputs)}
        # A task without new records gets a batch only if it sat out one, or (on a restarted driver's
        # first plan) if this is the batch it applied last: its host replays it.
        rerun = not self._planned_any and not self._new_query
        candidates = idle if rerun else idle & reported_behind(begin, statuses)
        catch_up = self._catching_up(begin, statuses, candidates, batch_id if rerun else None)
        self._planned_any = True
        batches = [
            TaskBatch(str(b.task), b.endpoint, b.generation,
                      tuple((tp.topic, tp.partition, s, e) for tp, (s, e) in sorted(b.ranges.items())), batch_id)
            for b in plan(begin, finish, statuses, generation, catch_up=catch_up)
        ]
        # A task that moved since latestOffset keeps its ranges: `read` finds its owner.
        planned = {b.task for b in batches}
        for task, status in sorted(statuses.items()):
            ranges = {tp: (begin[tp], finish[tp]) for tp in status.inputs if tp in finish and finish[tp] > begin[tp]}
            if ranges and str(task) not in planned:
                spans = tuple((tp.topic, tp.partition, s, e) for tp, (s, e) in sorted(ranges.items()))
                batches.append(TaskBatch(str(task), status.endpoint or "", generation, spans, batch_id))
        self._planned[batch_id] = batches
        return by_host(batches)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark committed the batch: acknowledge each task's batch to its host (the batch was
        made durable when it ran; this lets the host forget its kept output)."""
        committed = batch_of(end)
        batches = self._planned.pop(committed, [])
        for older in [b for b in self._planned if b < committed]:  # ones Spark has moved past
            self._planned.pop(older)
        # Planned while the task had no owner (endpoint ""): `read` found one, which has it applied.
        hosts = [group for group in by_host(batches) if group.endpoint]
        if len(hosts) > 1:  # the hosts answer in parallel: the next micro-batch waits for the slowest only
            with ThreadPoolExecutor(max_workers=len(hosts), thread_name_prefix="streams-rt-commit") as pool:
                list(pool.map(self._acknowledge, hosts))
        elif hosts:
            self._acknowledge(hosts[0])

    def _acknowledge(self, host: HostBatches) -> None:
        from streams_rt.rpc.batches import BatchError, HostClient

        with HostClient(host.endpoint, secret=_secret(self.options), tls_root_certs=_roots(self.options)) as client:
            for batch in host.batches:
                try:
                    client.commit(batch.request())
                except BatchError as e:  # the task moved: its new owner has the batch as applied last
                    log.info("task %s: commit not acknowledged by %s: %s", batch.task, batch.endpoint, e)

    def stop(self) -> None:
        if self._coordinator is not None:
            self._coordinator.close()
        self._coordinator = self._admin = None  # the Kafka client goes now, not when the process ends

    # -- executor side ---------------------------------------------------------------------------
    def _ensure_local_host(self) -> None:
        """On a cluster, this executor runs a host too (an executor added after the start-up job
        gets its host with its first read): it joins the group and takes its share of tasks."""
        from streams_rt.spark.executor_hosts import HostSpec, ensure_host, executor_jvm_pid

        if self.options.host_config is None or executor_jvm_pid() is None:
            return
        secret = _secret(self.options)
        ensure_host(HostSpec(json.loads(self.options.host_config), secret.environment() if secret else {}))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The output rows of the host's batches, task by task in plan order. The tasks' batches are
        asked for at once, each on its own connection, so the host runs them side by side."""
        assert isinstance(partition, HostBatches)
        self._ensure_local_host()
        if len(partition.batches) == 1:
            outputs = [self._task_output(partition.batches[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(partition.batches), thread_name_prefix="streams-rt-read") as pool:
                outputs = list(pool.map(self._task_output, partition.batches))
        for table in outputs:
            if table is not None:
                yield from table.to_batches()

    def _task_output(self, batch: TaskBatch) -> pa.Table | None:
        """The batch's output rows from the task's owner, or None if the task sits it out. If the
        task moved, the batch goes to its new owner when the coordinator names one that runs it.
        While the task is between owners the read waits a moment only where that ends soon (a new
        owner caught up on the task opening it, one that has not reported yet, a host being checked:
        refused_batch.py); otherwise (its new owner restores it, revoked, its host dead) the task
        sits this micro-batch out, and its records come with its next batch (module docstring; the
        host that runs that batch logs it, once). Other retriable refusals (the broker unavailable)
        are retried until `batch.retry.timeout.ms`. An owner that cannot be reached is reported to
        the coordinator, which removes it at once if it finds it dead, so the task moves without
        waiting for the owner's session timeout."""
        from streams_rt.rpc.batches import BatchError, HostClient
        from streams_rt.rpc.client import GroupClient
        from streams_rt.runtime.batch_loop import report_unreachable, task_status
        from streams_rt.spark.refused_batch import MOVING, UNREACHABLE, Next, after_refusal

        task = TaskId.parse(batch.task)
        request = batch.request()
        endpoint = batch.endpoint
        deadline = time.monotonic() + self.options.retry_timeout_ms / 1000
        secret = _secret(self.options)
        reported: set[str] = set()
        first_refusal: float | None = None
        while True:
            try:
                if not endpoint:
                    raise BatchError("NOT_OWNER", f"task {task} has no owner now")
                with HostClient(endpoint, secret=secret, tls_root_certs=_roots(self.options)) as client:
                    table = client.run_batch(request)
                break
            except BatchError as e:
                if not e.retriable or time.monotonic() > deadline:
                    raise RuntimeError(f"streams_rt: batch of task {task} failed: {e}") from None
                if first_refusal is None:
                    first_refusal = time.monotonic()
                if e.code not in MOVING:
                    time.sleep(0.25)
                roots = _roots(self.options)
                with GroupClient(self.options.coordinator, secret=secret, tls_root_certs=roots) as coordinator:
                    if e.code == UNREACHABLE and endpoint not in reported:
                        reported.add(endpoint)
                        report_unreachable(coordinator, self.options.application_id, endpoint, batch.generation)
                    _, statuses = task_status(coordinator, self.options.application_id)
                step = after_refusal(e.code, statuses.get(task), endpoint, time.monotonic() - first_refusal)
                if step.next is Next.SIT_OUT:
                    log.debug("task %s sits out batch %d (%s); its records come with its next batch",
                              task, batch.batch_id, e)
                    return None
                if step.next is Next.WAIT:
                    time.sleep(0.05)
                endpoint = step.endpoint
        return table
