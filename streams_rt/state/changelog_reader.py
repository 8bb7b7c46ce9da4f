"""One consumer for every changelog a host reads (Kafka's StoreChangelogReader): active tasks
restore their stores up to the changelog end, standby tasks follow theirs, and restores come first
(standby partitions are paused while any active task restores).

The consumer `assign`s partitions (no group), reads committed records only, and hands each run of
one partition's records in a `consume()` batch to its store as one write: per record, only the key
and value leave librdkafka."""

from __future__ import annotations

import enum
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from confluent_kafka import OFFSET_END, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from streams_rt.kafka.records import offset, topic_partition
from streams_rt.kafka.watermarks import WatermarkSource
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state.deferred_gc import collector_deferred
from streams_rt.state.errors import ChangelogError
from streams_rt.state.restore import CONSUME_BATCH, StateRestoreListener, changelog_range, split_events
from streams_rt.state.stores.base import StateStore

log = logging.getLogger(__name__)

NO_PROGRESS_TIMEOUT_S = 60.0
BATCHED_ENDS_TIMEOUT_S = 10.0  # then each partition is asked alone, with changelog_range's retries


class ChangelogConsumer(WatermarkSource, Protocol):
    """What the reader needs of its consumer (a confluent_kafka.Consumer, made by restore_consumer)."""

    def incremental_assign(self, partitions: list[KafkaTopicPartition]) -> None: ...
    def incremental_unassign(self, partitions: list[KafkaTopicPartition]) -> None: ...
    def pause(self, partitions: list[KafkaTopicPartition]) -> None: ...
    def resume(self, partitions: list[KafkaTopicPartition]) -> None: ...
    def seek(self, partition: KafkaTopicPartition) -> None: ...
    def consume(self, num_messages: int, timeout: float) -> list[Message]: ...
    def offsets_for_times(self, partitions: list[KafkaTopicPartition],
                          timeout: float = ...) -> list[KafkaTopicPartition]: ...
    def close(self) -> None: ...


class Restoring(Protocol):
    """A task whose stores the reader restores; told once every store reached its changelog end."""

    task: TaskId

    def restore_completed(self) -> None: ...


class ReadMode(enum.Enum):
    RESTORE = "restore"  # an active task's store, up to the changelog end
    STANDBY = "standby"  # a standby's store, for as long as it is registered


@dataclass
class _Partition:
    tp: TopicPartition
    owner: TaskId
    store: StateStore
    mode: ReadMode
    position: int  # the next offset to read: past applied records and past commit markers seen
    end: int = 0  # RESTORE: the end offset to reach
    restored: int = 0
    last_progress: float = 0.0

    def kafka(self) -> KafkaTopicPartition:
        return KafkaTopicPartition(self.tp.topic, self.tp.partition, self.position)


class ChangelogReader:
    """`restore` and `follow` register a task's changelog partitions, `remove` drops them, `poll`
    reads and applies whatever arrived. Restores report to `listener` (start, batches, end)."""

    def __init__(self, consumer: ChangelogConsumer, listener: StateRestoreListener | None = None,
                 no_progress_timeout_s: float = NO_PROGRESS_TIMEOUT_S) -> None:
        self._consumer = consumer
        self.listener = listener
        self._timeout_s = no_progress_timeout_s
        self._partitions: dict[TopicPartition, _Partition] = {}
        self._restoring: dict[TaskId, Restoring] = {}
        self._paused = False
        # Standbys that read nothing while this says so (a fault point of the tests: one stuck behind
        # its changelogs, falling behind deterministically); never, outside them.
        self.holds_standby: Callable[[TaskId], bool] = lambda task: False

    # -- registration ------------------------------------------------------------------------
    def changelog_range(self, tp: TopicPartition) -> tuple[int, int]:
        """(first offset, end offset) of a changelog partition; the end is the last stable offset."""
        return changelog_range(self._consumer, tp)

    def changelog_ends(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The end (last stable offset) of each changelog partition, asked in one request (a
        ListOffsets for the latest offset, which is what a timestamp of -1 asks for) rather than
        `changelog_range`'s two per partition: a promotion reads the ends of all its tasks at once
        (40-90 ms per task, one after another, measured on the failover's path). A partition the
        batched answer has no offset for is asked again alone, as `changelog_range` asks."""
        wanted = sorted(set(tps))
        if not wanted:
            return {}
        try:
            latest = [KafkaTopicPartition(tp.topic, tp.partition, OFFSET_END) for tp in wanted]
            found = self._consumer.offsets_for_times(latest, timeout=BATCHED_ENDS_TIMEOUT_S)
        except KafkaException:
            found = []
        ends = {TopicPartition(got.topic, got.partition): got.offset for got in found
                if got.error is None and got.offset >= 0}
        return {tp: ends[tp] if tp in ends else self.changelog_range(tp)[1] for tp in wanted}

    def restore(self, task: Restoring, stores: Mapping[TopicPartition, StateStore],
                starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]) -> None:
        """Restore each store from its start to its end; `task.restore_completed()` is called (from
        `poll`, or at once when there is nothing to read) once all have arrived."""
        now = time.monotonic()
        added = []
        for tp, store in stores.items():
            start, end = starts[tp], ends[tp]
            if start >= end:
                continue
            part = _Partition(tp, task.task, store, ReadMode.RESTORE, start, end, last_progress=now)
            self._add(part)
            added.append(part)
            if self.listener is not None:
                self.listener.on_restore_start(tp, store.name, start, end)
        if not added:
            task.restore_completed()
            return
        self._restoring[task.task] = task
        self._assign(added)

    def follow(self, task: TaskId, stores: Mapping[TopicPartition, StateStore],
               starts: Mapping[TopicPartition, int]) -> None:
        """Apply every record that arrives on these changelogs until `remove`d (a standby)."""
        added = [_Partition(tp, task, store, ReadMode.STANDBY, starts[tp]) for tp, store in stores.items()]
        for part in added:
            self._add(part)
        self._assign(added)

    def _add(self, part: _Partition) -> None:
        held = self._partitions.get(part.tp)
        if held is not None:
            raise ChangelogError(part.tp.topic, part.tp.partition, f"already read for task {held.owner}")
        self._partitions[part.tp] = part

    def remove(self, task: TaskId) -> dict[TopicPartition, int]:
        """Stop reading the task's changelogs; returns where reading would have gone on."""
        gone = [p for p in self._partitions.values() if p.owner == task]
        for part in gone:
            del self._partitions[part.tp]
        self._restoring.pop(task, None)
        if gone:
            self._consumer.incremental_unassign([p.kafka() for p in gone])
            self._pause_standbys_while_restoring()
        return {p.tp: p.position for p in gone}

    def _assign(self, parts: Sequence[_Partition]) -> None:
        """Assign and start fetching. The consumer keeps a partition's pause across unassign and
        assign (a standby paused behind a restore, then promoted, comes back paused), so what is
        assigned is resumed first; the standby rule then pauses what it must."""
        partitions = [p.kafka() for p in parts]
        self._consumer.incremental_assign(partitions)
        self._consumer.resume(partitions)
        self._pause_standbys_while_restoring()

    def _pause_standbys_while_restoring(self) -> None:
        """Restores first, as Kafka's reader: standbys wait while any active task restores."""
        pause = bool(self._restoring)
        standbys = [p.kafka() for p in self._partitions.values() if p.mode is ReadMode.STANDBY]
        if standbys and (pause or self._paused):
            (self._consumer.pause if pause else self._consumer.resume)(standbys)
        self._paused = pause
        held = [p.kafka() for p in self._partitions.values()
                if p.mode is ReadMode.STANDBY and self.holds_standby(p.owner)]
        if held:
            self._consumer.pause(held)

    # -- queries -----------------------------------------------------------------------------
    @property
    def restoring(self) -> frozenset[TaskId]:
        return frozenset(self._restoring)

    def positions(self, task: TaskId) -> dict[TopicPartition, int]:
        return {p.tp: p.position for p in self._partitions.values() if p.owner == task}

    def restore_progress(self) -> dict[TaskId, tuple[int, int]]:
        """Every restoring task's (records restored so far, offsets still to read)."""
        progress: dict[TaskId, tuple[int, int]] = {}
        for part in self._partitions.values():
            if part.mode is ReadMode.RESTORE:
                done, left = progress.get(part.owner, (0, 0))
                progress[part.owner] = (done + part.restored, left + max(0, part.end - part.position))
        return progress

    def lag(self, task: TaskId) -> int:
        """Offsets between the read positions and the changelogs' current committed ends (records
        plus commit markers not yet passed): 0 when caught up."""
        return sum(self.partition_lags(task).values())

    def partition_lags(self, task: TaskId) -> dict[TopicPartition, int]:
        """`lag` per changelog partition (Kafka's `records-lag`), from the ends the broker gives now."""
        return self.lags_of([task])[task]

    def lags_of(self, tasks: Iterable[TaskId]) -> dict[TaskId, dict[TopicPartition, int]]:
        """`partition_lags` of each of `tasks`, their ends asked in one request (the host reads
        its standbys' lags every second on the state thread, which commands wait behind)."""
        lags: dict[TaskId, dict[TopicPartition, int]] = {task: {} for task in tasks}
        parts = [p for p in self._partitions.values() if p.owner in lags]
        ends = self.changelog_ends(p.tp for p in parts)
        for p in parts:
            lags[p.owner][p.tp] = max(0, ends[p.tp] - p.position)
        return lags

    # -- reading -----------------------------------------------------------------------------
    def poll(self, timeout_s: float = 0.1, max_records: int = CONSUME_BATCH) -> dict[TaskId, int]:
        """Read and apply what arrived; tasks whose restore completes are told. Returns the number
        of records applied per task.

        If applying fails (a damaged store raises StoreCorrupted, a changelog a ChangelogError),
        every partition is rewound to its read position before the error propagates: the records
        of the batch not yet applied are read again, so the host can close the failed task and go
        on polling for the others without losing theirs."""
        if not self._partitions:
            time.sleep(timeout_s)  # nothing assigned: consume() would return at once
            return {}
        with collector_deferred():  # the batch's Messages would set off full collections
            applied, eofs = self._read(max_records, timeout_s)
        for eof in eofs:
            part = self._partitions.get(topic_partition(eof))
            if part is not None:
                part.position = max(part.position, offset(eof))
                if part.mode is ReadMode.RESTORE:
                    part.end = min(part.end, part.position)  # the end hid behind commit markers
        self._complete_restores()
        return applied

    def _read(self, max_records: int, timeout_s: float) -> tuple[dict[TaskId, int], list[Message]]:
        """One `consume()` batch, applied: records applied per task, and the batch's EOF events.
        The batch's records are freed when it returns (before `poll` lets the collector run)."""
        batch = self._consumer.consume(max_records, timeout_s)
        applied: dict[TaskId, int] = {}
        try:
            records, eofs = split_events(batch)
            for tp, run in self._runs(records):
                part = self._partitions.get(tp)
                if part is None:
                    continue  # fetched before its task was removed
                applied[part.owner] = applied.get(part.owner, 0) + self._apply(part, run)
        except BaseException:
            self._rewind()
            raise
        return applied, eofs

    def _rewind(self) -> None:
        """Seek every partition back to its read position (after a failed poll)."""
        for part in self._partitions.values():
            try:
                self._consumer.seek(part.kafka())
            except KafkaException as exc:  # a partition with nothing fetched yet has nothing to lose
                log.warning("changelog %s: cannot seek back to offset %d: %s", part.tp, part.position, exc)

    def _runs(self, records: list[Message]) -> Iterable[tuple[TopicPartition, list[Message]]]:
        """The batch cut into runs of one partition (librdkafka hands them out fetch by fetch);
        with one partition assigned, the batch is one run and nothing is looked at per record.
        Runs are cut by partition number, then by topic where a run's topics differ (tasks with
        several stores read the same partition number of several changelogs): C loops, and no tuple
        made per record (a zip of topics and partitions cost 0.1 us a record)."""
        if not records:
            return []
        if len(self._partitions) == 1:
            (tp,) = self._partitions
            first, last = records[0], records[-1]
            if (first.topic(), first.partition()) == (last.topic(), last.partition()) == tp:
                return [(tp, records)]
        runs = []
        for _, group in itertools.groupby(records, Message.partition):
            run = list(group)
            topics = list(map(Message.topic, run))
            if topics.count(topics[0]) == len(run):
                runs.append((topic_partition(run[0]), run))
                continue
            for _, same in itertools.groupby(run, Message.topic):
                part = list(same)
                runs.append((topic_partition(part[0]), part))
        return runs

    def _apply(self, part: _Partition, run: list[Message]) -> int:
        keys = list(map(Message.key, run))
        if not _no_none(keys):
            bad = run[keys.index(None)]
            raise ChangelogError(part.tp.topic, part.tp.partition, f"record at offset {bad.offset()} has a null key")
        last = offset(run[-1])
        if part.mode is ReadMode.RESTORE and not part.restored:
            part.store.begin_restore()  # a RocksDB store opens with bulk-load options
        part.store.apply_changelog(keys, list(map(Message.value, run)), last)
        part.position = last + 1
        if part.mode is ReadMode.RESTORE:
            part.restored += len(run)
            part.last_progress = time.monotonic()
            if self.listener is not None:
                self.listener.on_batch_restored(part.tp, part.store.name, last, len(run))
        return len(run)

    def _complete_restores(self) -> None:
        """Tell every task whose stores all reached their ends. Their stores' flushes start first,
        all of them, so they run side by side on RocksDB's flush threads while each task in turn
        waits for its own (8 tasks ending in one poll waited for 8 flushes one by one)."""
        now = time.monotonic()
        done: list[tuple[TaskId, Restoring, list[_Partition]]] = []
        for task_id, task in self._restoring.items():
            parts = [p for p in self._partitions.values() if p.owner == task_id]
            pending = [p for p in parts if p.position < p.end]
            stalled = [p for p in pending if now - p.last_progress > self._timeout_s]
            if stalled:
                p = stalled[0]
                raise ChangelogError(p.tp.topic, p.tp.partition,
                                     f"no progress for {self._timeout_s:.0f} s at offset {p.position} "
                                     f"(restoring to {p.end})")
            if not pending:
                done.append((task_id, task, parts))
        for _, _, parts in done:
            for part in parts:
                part.store.start_sync()
        for task_id, task, parts in done:
            if task_id not in self._restoring:
                continue  # removed by an earlier task's completion (a host's callback)
            for part in parts:
                del self._partitions[part.tp]
                if self.listener is not None:
                    self.listener.on_restore_end(part.tp, part.store.name, part.restored)
            self._consumer.incremental_unassign([p.kafka() for p in parts])
            del self._restoring[task_id]
            self._pause_standbys_while_restoring()
            task.restore_completed()

    def finish_restores(self) -> None:
        """Poll until no task is restoring (for callers without a state thread: tools, tests);
        a restore without progress for the timeout raises ChangelogError."""
        while self._restoring:
            self.poll()

    def close(self) -> None:
        self._partitions.clear()
        self._restoring.clear()
        self._consumer.close()


def _no_none(keys: list[bytes | None]) -> TypeGuard[list[bytes]]:
    return None not in keys
