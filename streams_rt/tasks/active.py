"""One active task in a host: its state (restored by the host's state thread), its subtopology
runner, its input consumer, and the batches it runs and commits.

A batch reads exactly its ranges, runs the subtopology, flushes the record caches, records its
ranges and output rows in the task's batch store, and commits: changelogs, repartition and sink
records and input offsets in one transaction under exactly_once_v2 (flushed, then the offsets, under
at_least_once), then the stores and the checkpoint. A failed batch rolls back: the stores stay as of
the last commit."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from streams_rt.kafka.committed import committed_offsets
from streams_rt.kafka.watermarks import watermark_offsets
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state import Mode, StoreSpec, TaskState, WindowSpec
from streams_rt.state.deferred_gc import collect_if_grown, collector_deferred
from streams_rt.tasks import batch_record
from streams_rt.tasks.execution.runner import DeserializationHandler, SubtopologyRunner
from streams_rt.tasks.faults import Faults
from streams_rt.tasks.host_metrics import TaskMetrics
from streams_rt.tasks.input_reader import InputReader
from streams_rt.tasks.output import OutputSchema
from streams_rt.tasks.task import ActiveTask, Admission, Ranges, Refusal, TaskPhase
from streams_rt.topology import Topology, TopologyLayout

log = logging.getLogger(__name__)


class BatchRefused(Exception):
    """The host will not run this batch now; `refusal` says why and whether to retry elsewhere/later."""

    def __init__(self, refusal: Refusal, reason: str) -> None:
        super().__init__(f"{refusal.value}: {reason}")
        self.refusal, self.reason = refusal, reason


@dataclass
class BatchTimings:
    """Where a task's batches spent their time (seconds, summed): reading the input (consume), running
    the operators (deserialization, user code, column operations, aggregation into the caches:
    process), flushing the caches (serializing, store writes: flush), handing records to the producer
    (repartition, output and changelog sends: produce), committing (transaction or flush, RocksDB,
    checkpoint: commit)."""

    batches: int = 0
    records: int = 0
    consume_s: float = 0.0
    process_s: float = 0.0
    flush_s: float = 0.0
    produce_s: float = 0.0
    commit_s: float = 0.0

    def add(self, other: BatchTimings) -> None:
        for name in ("batches", "records", "consume_s", "process_s", "flush_s", "produce_s", "commit_s"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(frozen=True)
class ProcessingSettings:
    application_id: str
    exactly_once: bool
    cache_max_bytes: int
    deserialization_handler: DeserializationHandler
    ownership_log: Path | None = None  # `task.ownership.log`: the audit file, if any


def store_specs(topology: Topology, subtopology: int) -> list[StoreSpec]:
    """The task's stores as the state layer opens them: the topology's, plus its batch store."""
    specs = []
    for name in topology.subtopologies[subtopology].stores:
        d = topology.stores[name]
        window = None
        if d.window_size_ms is not None and d.retention_ms is not None:
            window = WindowSpec(retention_ms=d.retention_ms, window_size_ms=d.window_size_ms,
                                retain_duplicates=d.retain_duplicates, sessions=d.sessions)
        specs.append(StoreSpec(name, window, d.in_memory))
    specs.append(StoreSpec(batch_record.store_name(subtopology)))
    return specs


class ActiveTaskRunner:
    def __init__(self, task: TaskId, topology: Topology, layout: TopologyLayout, state: TaskState,
                 consumer_factory: Callable[[], Consumer], settings: ProcessingSettings,
                 faults: Faults | None = None, on_batch: Callable[[Ranges, bool], None] | None = None) -> None:
        self.task = task
        self.core = ActiveTask(task, frozenset(layout.input_partitions(task)))
        self.state = state
        self._topology = topology
        self._consumer_factory = consumer_factory
        self._settings = settings
        self._faults = faults or Faults()
        self._on_batch = on_batch  # told of every batch committed or replayed, inside the batch lock
        self._output = OutputSchema(topology)
        self._consumer: Consumer | None = None
        self._reader: InputReader | None = None
        self._runner: SubtopologyRunner | None = None
        self._kept: pa.Table | None = None  # output of the last batch, for a replay
        self._kept_chunks = 0
        self.timings = BatchTimings()
        self.metrics = TaskMetrics()
        self._cache_bytes = settings.cache_max_bytes
        self.lock = threading.Lock()  # one batch at a time; revocation waits for it
        self._closing = False  # set before close takes the lock: a batch asked for then is refused at once

    # -- lifecycle (the host's state thread) ---------------------------------------------------
    def start_restore(self, changelog_ends: Mapping[TopicPartition, int] | None = None) -> None:
        """CREATED -> RESTORING: open the state (or promote the standby already open, reading its
        changelogs up to `changelog_ends` where given)."""
        self.core.move(TaskPhase.RESTORING)
        if self.state.mode is Mode.STANDBY:
            self.state.promote(changelog_ends)
        else:
            self.state.open_active()

    @property
    def restore_done(self) -> bool:
        return self.core.phase is TaskPhase.RESTORING and self.state.mode is Mode.ACTIVE

    def start_running(self) -> None:
        """RESTORING -> RUNNING once the state is restored: find the committed positions and the
        batch applied last, and build the runner."""
        batch_store = self.state.kv_store(batch_record.store_name(self.task.subtopology))
        last = batch_record.decode(batch_store.get)
        self._consumer = self._consumer_factory()
        self._reader = InputReader(self._consumer)
        if last is not None:
            positions = {tp: end for tp, (_, end) in last.ranges.items()}
            self._kept, self._kept_chunks = last.table(), last.chunks
        else:
            positions = self._committed_or_earliest(self._consumer)
        sub = self._topology.subtopologies[self.task.subtopology]
        stores = {name: self.state.store(name) for name in sub.stores}
        self._runner = SubtopologyRunner(
            self._topology, sub, self.task, self._settings.application_id, stores, self.state.send,
            cache_max_bytes=self._cache_bytes,
            deserialization_handler=self._settings.deserialization_handler,
        )
        if last is not None:
            self._runner.set_stream_times(last.stream_times)
        self.core.restored(positions, last.ranges if last is not None else None,
                           last.batch_id if last is not None else None)
        log.info("task %s: running from %s", self.task,
                 ", ".join(f"{tp}@{o}" for tp, o in sorted(self.core.positions.items())))

    def _committed_or_earliest(self, consumer: Consumer) -> dict[TopicPartition, int]:
        """No batch was ever applied: the application's committed offsets, else the beginning."""
        tps = sorted(self.core.inputs)
        committed = committed_offsets(consumer, [KafkaTopicPartition(tp.topic, tp.partition) for tp in tps])
        positions = {}
        for tp, found in zip(tps, committed, strict=True):
            if found.offset >= 0:
                positions[tp] = found.offset
            else:
                positions[tp] = watermark_offsets(consumer, tp.topic, tp.partition)[0]
        return positions

    # -- batches (the host's RPC threads) ------------------------------------------------------
    def run_batch(self, ranges: Ranges, batch_id: int | None = None) -> pa.Table:
        """Run (or replay) one batch and return its output rows; raises BatchRefused, or
        ProcessingFailed / DeserializationFailed after rolling back."""
        if self._closing:  # given up: a read must not wait the close out (it sits the batch out instead)
            raise BatchRefused(Refusal.NOT_OWNER, f"task {self.task} is being closed here")
        with self.lock:
            admission: Admission = self.core.admit(ranges, batch_id)
            if admission.refusal is not None:
                raise BatchRefused(admission.refusal, admission.reason)
            if admission.replay:
                log.info("task %s: replaying the last batch from what was kept", self.task)
                kept = self._kept if self._kept is not None else self._output.empty_table()
                ran: Ranges = self.core.last_ranges or {}
            elif admission.ranges is None:  # nothing to do: no commit, nothing recorded
                return self._output.empty_table()
            else:
                if admission.reason:
                    log.info("task %s: batch %s: %s", self.task, batch_id, admission.reason)
                kept = self._run(admission.ranges, batch_id)
                ran = admission.ranges
            if self._on_batch is not None:
                self._on_batch(ran, admission.replay)
            return kept

    def _run(self, ranges: Ranges, batch_id: int | None) -> pa.Table:
        runner, consumer, reader = self._runner, self._consumer, self._reader
        assert runner is not None and consumer is not None and reader is not None  # RUNNING
        t = self.timings
        records = consumed_s = processed_s = 0.0
        dropped_before = runner.skipped_deserialization
        produced_before = self.state.produce_seconds
        try:
            with collector_deferred():  # a chunk's Messages and records would set off collection after collection
                chunks = reader.read(ranges)
                while True:
                    mark = time.perf_counter()
                    chunk = next(chunks, None)
                    consumed_s += time.perf_counter() - mark
                    if chunk is None:
                        break
                    mark = time.perf_counter()
                    runner.process(chunk)
                    records += sum(len(r) for r in chunk.values())
                    del chunk
                    collect_if_grown()
                    processed_s += time.perf_counter() - mark
            runner.punctuate_wall_clock(int(time.time() * 1000))
            processed, produced_processing = time.perf_counter(), self.state.produce_seconds
            runner.flush()
            output = self._output.to_batch(runner.take_output(), str(self.task))
            stream_times = runner.stream_times()
            self._record(ranges, output, batch_id, stream_times)
            flushed, produced = time.perf_counter(), self.state.produce_seconds
            ends = {tp: end for tp, (_, end) in ranges.items()}
            self._faults.reached("before_commit", self.task)
            if self._settings.exactly_once:
                self.state.commit(ends, consumer.consumer_group_metadata())
            else:
                self.state.commit()
                consumer.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in ends.items()],
                                asynchronous=False)
            self._faults.reached("after_commit", self.task)
        except BaseException:
            runner.abort()
            self.state.rollback()
            raise
        runner.committed(stream_times)
        t.batches += 1
        t.records += int(records)
        t.consume_s += consumed_s
        t.process_s += processed_s - (produced_processing - produced_before)
        t.flush_s += flushed - processed - (produced - produced_processing)
        t.produce_s += produced - produced_before
        committed_s = time.perf_counter() - flushed
        t.commit_s += committed_s
        self.metrics.batch_committed(int(records), processed_s + flushed - processed, committed_s,
                                     runner.skipped_deserialization - dropped_before)
        self.core.applied(ranges, batch_id)
        self._kept = pa.Table.from_batches([output])
        return self._kept

    def _record(self, ranges: Ranges, output: pa.RecordBatch, batch_id: int | None,
                stream_times: Mapping[str, int]) -> None:
        store = self.state.kv_store(batch_record.store_name(self.task.subtopology))
        writes = batch_record.encode(ranges, output, self._kept_chunks, batch_id, stream_times)
        for key, value in writes.items():
            store.put(key, value)
        self._kept_chunks = sum(1 for k, v in writes.items() if k != batch_record.HEADER_KEY and v is not None)

    # -- closing -------------------------------------------------------------------------------
    def close(self, clean: bool) -> None:
        """Revoked (clean: wait for the batch in flight, then commit and close) or lost (dirty)."""
        self._closing = True
        with self.lock:
            self._faults.reached("stall_on_close", self.task)
            if self.core.phase is TaskPhase.RUNNING:
                self.core.move(TaskPhase.SUSPENDED)
            if self.core.phase is not TaskPhase.CLOSED:
                self.core.move(TaskPhase.CLOSED)
            if self._runner is not None:
                self._runner.close()
            self.state.close(clean=clean)
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None

    def set_cache_budget(self, max_bytes: int) -> None:
        """This task's share of the host's `statestore.cache.max.bytes` (the host divides it among
        its active tasks whenever they change, as Kafka divides it among threads)."""
        with self.lock:
            self._cache_bytes = max_bytes
            if self._runner is not None:
                self._runner.cache.resize(max_bytes)

    def positions(self) -> Mapping[TopicPartition, int]:
        return dict(self.core.positions)
