"""The state of one task (Kafka's ProcessorStateManager): lock, stores, checkpoint, changelogs,
restore, commit, and the standby-to-active promotion.

Commit order: changelog flush or transaction commit, then each store's WriteBatch (WAL on), then the
WAL is synced, then the checkpoint is written. A crash at any point leaves RocksDB at or behind the
changelog and the checkpoint at or behind RocksDB; replaying the changelog from checkpoint + 1 is
idempotent, so the restored state equals the changelog's committed content.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import Consumer, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from streams_rt.protocol import OFFSET_SUM_OFFSET_UNKNOWN, TaskId, TopicPartition
from streams_rt.state.changelog import ChangelogSpec, ChangelogWriter, changelog_topic
from streams_rt.state.checkpoint import offset_sum
from streams_rt.state.config import StateConfig
from streams_rt.state.errors import CorruptCheckpoint, StateError
from streams_rt.state.restore import (
    CONSUME_BATCH,
    ConsoleRestoreListener,
    StateRestoreListener,
    changelog_range,
    restore_consumer,
    restore_store,
    split_events,
)
from streams_rt.state.state_directory import StateDirectory, TaskLock
from streams_rt.state.stores.base import RocksDBStore
from streams_rt.state.stores.kv import KeyValueStore
from streams_rt.state.stores.window import WindowStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WindowSpec:
    retention_ms: int
    window_size_ms: int
    segment_interval_ms: int | None = None


@dataclass(frozen=True)
class StoreSpec:
    """A store as the topology declares it; `window` makes it a window store."""

    name: str
    window: WindowSpec | None = None

    def changelog(self, application_id: str) -> ChangelogSpec:
        return ChangelogSpec(
            changelog_topic(application_id, self.name),
            None if self.window is None else self.window.retention_ms,
        )


class TaskState:
    """Opened active (`open_active`) or standby (`open_standby`); never both at once. Restores
    report to `listener` (default: a console progress bar and one log line per store)."""

    def __init__(
        self,
        config: StateConfig,
        directory: StateDirectory,
        task: TaskId,
        specs: Sequence[StoreSpec],
        listener: StateRestoreListener | None = None,
    ) -> None:
        self.config, self.directory, self.task = config, directory, task
        self.listener = listener if listener is not None else ConsoleRestoreListener()
        self._specs = {spec.name: spec for spec in specs}
        self._lock: TaskLock | None = None
        self._stores: dict[str, RocksDBStore] = {}
        self._tps: dict[str, TopicPartition] = {}
        self.offsets: dict[TopicPartition, int] = {}  # last changelog offset each store contains
        # Standby read positions: past the last record applied and past commit markers seen at
        # the end (partition-EOF events); the only record of where a standby reads next.
        self._positions: dict[TopicPartition, int] = {}
        self._writer: ChangelogWriter | None = None
        self._consumer: Consumer | None = None
        self.standby = False

    # -- opening -----------------------------------------------------------------------------
    def _open_common(self) -> dict[TopicPartition, int]:
        """Lock the task directory, create the stores, read the checkpoint (wiping on corruption)."""
        self._lock = self.directory.lock_task(self.task)
        task_dir = self._lock.directory
        for name, spec in self._specs.items():
            setter = self.config.rocksdb_config_setter
            if spec.window is None:
                store: RocksDBStore = KeyValueStore(name, task_dir, setter)
            else:
                store = WindowStore(name, task_dir, spec.window.retention_ms, spec.window.window_size_ms,
                                    spec.window.segment_interval_ms, setter)
            self._stores[name] = store
            self._tps[name] = TopicPartition(spec.changelog(self.config.application_id).topic, self.task.partition)
        checkpoint = self.directory.checkpoint_for(self.task)
        try:
            checkpointed = checkpoint.read()
        except CorruptCheckpoint as exc:
            log.warning("task %s: %s; wiping its stores and restoring from the beginning", self.task, exc)
            checkpoint.delete()
            for store in self._stores.values():
                store.wipe()
            checkpointed = {}
        self._consumer = restore_consumer(self.config.bootstrap_servers, f"{self.config.application_id}-restore")
        return checkpointed

    def _validate(self, checkpointed: Mapping[TopicPartition, int]) -> dict[TopicPartition, tuple[int, int]]:
        """Keep a checkpointed offset only if it lies in the changelog's current range; otherwise
        (or without one) wipe the store so the restore from the beginning starts from empty.
        Returns each changelog's range `(low, end)`: looked up once per open, not once per step."""
        assert self._consumer is not None
        ranges: dict[TopicPartition, tuple[int, int]] = {}
        for name, store in self._stores.items():
            tp = self._tps[name]
            low, high = ranges[tp] = changelog_range(self._consumer, tp)
            offset = checkpointed.get(tp)
            if offset is None or offset == OFFSET_SUM_OFFSET_UNKNOWN:
                if not store.path.exists():
                    continue
                reason = "no checkpointed offset"
                quiet = offset is None and not _holds_data(store)  # leftovers of a store never written
            elif not store.path.exists():
                reason, quiet = f"store files are missing although offset {offset} is checkpointed", False
            elif not low - 1 <= offset < high:
                reason, quiet = f"checkpointed offset {offset} is outside the changelog's range [{low}, {high})", False
            else:
                self.offsets[tp] = offset
                continue
            if not quiet:
                log.warning("task %s store %s: %s; wiping it and restoring %s from the beginning",
                            self.task, name, reason, tp)
            store.wipe()  # closed: only its files go
        return ranges

    def _start_offsets(self, ranges: Mapping[TopicPartition, tuple[int, int]]) -> dict[TopicPartition, int]:
        """Where reading resumes after an open: past the checkpointed offset, else the changelog's beginning."""
        return {tp: self.offsets[tp] + 1 if tp in self.offsets else low for tp, (low, _) in ranges.items()}

    def open_active(self) -> None:
        """Lock, fence the previous owner (exactly-once), restore every store to the changelog end."""
        try:
            checkpointed = self._open_common()
            self._writer = self._new_writer()  # after the lock: never fence a live owner
            ranges = self._validate(checkpointed)
            starts = self._start_offsets(ranges)
            for name, store in self._stores.items():
                tp = self._tps[name]
                self._catch_up(name, store, starts[tp], ranges[tp][1])
            self._attach_changelogs()
            self._write_checkpoint()
        except BaseException:
            self.close(clean=False)
            raise

    def open_standby(self) -> None:
        """Lock and open the stores read-only; `update` then applies the changelogs continuously."""
        self.standby = True
        try:
            ranges = self._validate(self._open_common())
            assert self._consumer is not None
            self._positions = self._start_offsets(ranges)
            assignment = []
            for name, store in self._stores.items():
                store.open()
                tp = self._tps[name]
                assignment.append(KafkaTopicPartition(tp.topic, tp.partition, self._positions[tp]))
            self._consumer.assign(assignment)
        except BaseException:
            self.close(clean=False)
            raise

    def _new_writer(self) -> ChangelogWriter:
        """Exactly-once: transactional with the task's id, which fences the previous owner and
        aborts its open transaction, so its uncommitted writes are never restored."""
        tx_id = f"{self.config.application_id}-{self.task}" if self.config.exactly_once else None
        return ChangelogWriter(self.config.bootstrap_servers, tx_id)

    def _catch_up(self, name: str, store: RocksDBStore, start: int, end: int) -> None:
        """Restore `store` from `start` to `end`, then make it durable. A closed store (open_active)
        is bulk loaded only if records arrive, else opened once with the processing options; an
        open one (promote) stays open."""
        assert self._consumer is not None
        tp = self._tps[name]
        if start < end:
            last_offset = restore_store(self._consumer, store, tp, start, end, self.listener)
            if last_offset is not None:
                self.offsets[tp] = last_offset
        if store.bulk_loading:
            store.end_bulk_load()  # flush, keep L0 below the slowdown trigger, processing options
        elif store.is_open:
            store.sync()
        else:
            store.open()

    def _attach_changelogs(self) -> None:
        writer = self._writer
        assert writer is not None
        for name, store in self._stores.items():
            tp = self._tps[name]
            store.attach_changelog(lambda key, value, t=tp.topic, p=tp.partition: writer.send(t, p, key, value))

    # -- processing --------------------------------------------------------------------------
    def store(self, name: str) -> RocksDBStore:
        return self._stores[name]

    def commit(self) -> None:
        """The commit point: changelog durable, then stores, then the checkpoint."""
        if self._writer is None:
            raise StateError(f"task {self.task} is not active")
        written = self._writer.commit()
        for store in self._stores.values():
            store.commit()
            store.sync()
        self.offsets.update(written)  # the writer only writes this task's changelog partitions
        self._write_checkpoint()

    def _write_checkpoint(self) -> None:
        self.directory.checkpoint_for(self.task).write(self.offsets)

    def offset_sum(self) -> int:
        return offset_sum(self.offsets)

    # -- standby -----------------------------------------------------------------------------
    def update(self, timeout_s: float = 0.1, max_records: int = CONSUME_BATCH) -> int:
        """Standby: apply whatever the changelogs have; returns the number of records applied."""
        assert self.standby and self._consumer is not None
        records, eofs = split_events(self._consumer.consume(max_records, timeout_s))
        for eof in eofs:
            tp = TopicPartition(eof.topic(), eof.partition())
            self._positions[tp] = max(self._positions[tp], eof.offset())
        by_topic: dict[str, list[Message]] = {}
        for message in records:
            by_topic.setdefault(message.topic(), []).append(message)
        applied = 0
        for name, store in self._stores.items():
            tp = self._tps[name]
            batch = by_topic.get(tp.topic)
            if batch:
                store.apply_changelog(batch)
                self.offsets[tp] = batch[-1].offset()
                self._positions[tp] = max(self._positions[tp], self.offsets[tp] + 1)
                applied += len(batch)
        return applied

    def lag(self) -> int:
        """Standby: offsets between the read position and the changelogs' current committed ends
        (records plus any commit markers not yet passed): 0 when caught up."""
        assert self.standby and self._consumer is not None
        return sum(max(0, changelog_range(self._consumer, tp)[1] - self._positions[tp]) for tp in self._tps.values())

    def checkpoint(self) -> None:
        """Make applied records durable and checkpoint them (standbys do this periodically)."""
        for store in self._stores.values():
            store.sync()
        self._write_checkpoint()

    def promote(self) -> None:
        """Standby to active, in place: the stores stay open, only the tail not yet applied is
        read (from the standby's read position), then writes go to the changelog."""
        assert self.standby and self._consumer is not None
        self._consumer.unassign()
        self.checkpoint()
        self.standby = False
        self._writer = self._new_writer()
        for name, store in self._stores.items():
            tp = self._tps[name]
            # The end is read now, after the fencing: the previous owner may have committed since.
            self._catch_up(name, store, self._positions[tp], changelog_range(self._consumer, tp)[1])
        self._attach_changelogs()
        self._write_checkpoint()

    # -- closing -----------------------------------------------------------------------------
    def close(self, clean: bool = True) -> None:
        """Clean: commit (active) or checkpoint (standby), then release everything. Dirty: drop
        uncommitted writes (purged from the producer too) and abort the open transaction; the
        checkpoint stays as it was."""
        committed = False
        try:
            if clean and self._lock is not None:
                if self.standby:
                    self.checkpoint()
                elif self._writer is not None:
                    self.commit()
                    committed = True
            elif self._writer is not None:
                try:
                    self._writer.abort()
                except Exception as exc:  # noqa: BLE001 - fenced or broker gone: the txn times out
                    log.warning("task %s: aborting the changelog transaction failed: %s", self.task, exc)
        finally:
            for store in self._stores.values():
                store.close()
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
            if self._writer is not None:
                self._writer.close(discard=not committed)
                self._writer = None
            if self._lock is not None:
                self._lock.release()
                self._lock = None


def _holds_data(store: RocksDBStore) -> bool:
    """Open a closed store just to look: only whether wiping it deserves a warning depends on it."""
    store.open()
    try:
        return not store.is_empty()
    finally:
        store.close()
