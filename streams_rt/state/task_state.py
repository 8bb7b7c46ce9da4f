"""The state of one task (Kafka's ProcessorStateManager): lock, stores, checkpoint, changelogs,
restore, commit, and the standby-to-active promotion, as an explicit lifecycle.

    CREATED --open_active--> RESTORING --restore_completed--> ACTIVE --close--> CLOSED
    CREATED --open_standby-> STANDBY --promote--> RESTORING
    (any open mode) --close--> CLOSED

Its collaborators are injected: the host's shared `ChangelogReader` restores and follows the
changelogs; `writer_factory` makes the task's changelog producer. Commit order: changelog flush or
transaction commit, then each store applies its overlay together with the changelog offset it
reaches (one atomic write), then the checkpoint file. The stores' own offsets decide where a
restore resumes; the checkpoint file (Kafka's format) is what tools and offset sums read.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state.changelog import ChangelogSpec, ChangelogWriter, changelog_topic
from streams_rt.state.changelog_reader import ChangelogReader
from streams_rt.state.checkpoint import offset_sum
from streams_rt.state.config import StateConfig
from streams_rt.state.errors import CorruptCheckpoint, StateError, StoreCorrupted
from streams_rt.state.state_directory import StateDirectory, TaskLock
from streams_rt.state.stores.base import StateStore
from streams_rt.state.stores.kv import KeyValueStore, RocksDBKeyValueStore
from streams_rt.state.stores.memory import InMemoryKeyValueStore, InMemoryWindowStore
from streams_rt.state.stores.rocksdb import RocksDBStore
from streams_rt.state.stores.window import RocksDBWindowStore, WindowStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WindowSpec:
    """A window store's shape (see stores/window.py: duplicates for a stream-stream join's windows,
    sessions for a session store)."""

    retention_ms: int
    window_size_ms: int
    segment_interval_ms: int | None = None
    retain_duplicates: bool = False
    sessions: bool = False


@dataclass(frozen=True)
class StoreSpec:
    """A store as the topology declares it: `window` makes it a window store, `in_memory` keeps it
    in memory (restored from its changelog after every open) instead of RocksDB."""

    name: str
    window: WindowSpec | None = None
    in_memory: bool = False

    def changelog(self, application_id: str) -> ChangelogSpec:
        return ChangelogSpec(
            changelog_topic(application_id, self.name),
            None if self.window is None else self.window.retention_ms,
        )


class Mode(enum.Enum):
    CREATED = "CREATED"
    RESTORING = "RESTORING"  # active: stores are being restored to their changelogs' ends
    ACTIVE = "ACTIVE"  # restored, writable, committing
    STANDBY = "STANDBY"  # following the changelogs, read-only
    CLOSED = "CLOSED"


TRANSITIONS: Mapping[Mode, frozenset[Mode]] = {
    Mode.CREATED: frozenset({Mode.RESTORING, Mode.STANDBY, Mode.CLOSED}),
    Mode.RESTORING: frozenset({Mode.ACTIVE, Mode.CLOSED}),
    Mode.STANDBY: frozenset({Mode.RESTORING, Mode.CLOSED}),
    Mode.ACTIVE: frozenset({Mode.CLOSED}),
    Mode.CLOSED: frozenset(),
}


class TaskStateBusy(StateError):
    """`reading(wait=False)` found the task's stores being opened, closed or committed to."""


class TaskStateError(StateError):
    """A call that the task's state does not allow in its current mode (a bug in the caller)."""

    def __init__(self, task: TaskId, action: str, mode: Mode) -> None:
        self.task, self.action, self.mode = task, action, mode
        super().__init__(f"task {task}: cannot {action} while {mode.value}")


WriterFactory = Callable[[str | None], ChangelogWriter]  # transactional.id (None: at-least-once)


class TaskState:
    def __init__(
        self,
        config: StateConfig,
        directory: StateDirectory,
        task: TaskId,
        specs: Sequence[StoreSpec],
        reader: ChangelogReader,
        *,
        writer_factory: WriterFactory | None = None,
    ) -> None:
        self.config, self.directory, self.task = config, directory, task
        self.mode = Mode.CREATED
        self._reader = reader
        self._new_writer: WriterFactory = writer_factory or (
            lambda tx_id: ChangelogWriter(config.bootstrap_servers, tx_id)
        )
        self._specs = {spec.name: spec for spec in specs}
        self._tps = {
            name: TopicPartition(spec.changelog(config.application_id).topic, task.partition)
            for name, spec in self._specs.items()
        }
        self._lock: TaskLock | None = None
        self._stores: dict[str, StateStore] = {}
        self._checkpointed: dict[TopicPartition, int] = {}  # the checkpoint file as found at open
        self._writer: ChangelogWriter | None = None
        # Held by readers on other threads (interactive queries) and by whatever opens, reopens or
        # closes the stores, or applies a commit to them: a reader never meets a store mid-reopen,
        # never keeps a snapshot alive across a close (it would hold RocksDB's LOCK), and sees a
        # commit whole or not at all.
        self._guard = threading.RLock()

    # -- lifecycle ---------------------------------------------------------------------------
    def _move(self, action: str, to: Mode) -> None:
        if to not in TRANSITIONS[self.mode]:
            raise TaskStateError(self.task, action, self.mode)
        self.mode = to

    def _require(self, action: str, *modes: Mode) -> None:
        if self.mode not in modes:
            raise TaskStateError(self.task, action, self.mode)

    def open_active(self) -> None:
        """Lock, fence the previous owner (exactly-once) and register every store's restore with the
        reader; `restore_completed` follows once they reached their changelogs' ends."""
        self._move("open as active", Mode.RESTORING)
        try:
            self._open_stores()
            self._writer = self._new_writer(self._transactional_id())  # after the lock: never fence a live owner
            starts, ends = self._resume_points()
            self._reader.restore(self, self._by_tp(), starts, ends)
        except BaseException:
            self.close(clean=False)
            raise

    def open_standby(self) -> None:
        """Lock, open the stores and follow their changelogs (read-only) until promoted or closed."""
        self._move("open as standby", Mode.STANDBY)
        try:
            self._open_stores()
            starts, _ = self._resume_points()
            for store in self._stores.values():
                if not store.is_open:
                    store.open()
            self._reader.follow(self.task, self._by_tp(), starts)
        except BaseException:
            self.close(clean=False)
            raise

    def fence(self) -> None:
        """A standby about to be promoted: open its changelog writer now. Under exactly-once that
        fences the previous owner, and the broker first aborts its open transaction (see
        kafka/transactional.py); the host fences every standby it promotes at once, in parallel,
        before promoting them one by one. Safe to call from another thread while the standby
        follows its changelogs: only the writer is made."""
        self._require("fence", Mode.STANDBY)
        if self._writer is None:
            self._writer = self._new_writer(self._transactional_id())

    def promote(self, ends: Mapping[TopicPartition, int] | None = None) -> None:
        """Standby to active, in place: the stores stay open and only the tail not yet applied is
        read, up to the changelogs' `ends` (read here for those not given). Ends must be read after
        the fencing: the previous owner may have committed since."""
        with self._guard:
            self._move("promote", Mode.RESTORING)
        try:
            positions = self._reader.remove(self.task)
            self._checkpoint()
            if self._writer is None:  # not fenced ahead (fence())
                self._writer = self._new_writer(self._transactional_id())
            known = ends or {}
            tails = {tp: known[tp] if tp in known else self._reader.changelog_range(tp)[1] for tp in positions}
            self._reader.restore(self, self._by_tp(), positions, tails)
        except BaseException:
            self.close(clean=False)
            raise

    def restore_completed(self) -> None:
        """Called by the reader: every store reached its end. Make the restore durable, open the
        stores for processing, route their writes to the changelogs, checkpoint."""
        with self._guard:
            self._move("complete a restore", Mode.ACTIVE)
            writer = self._active_writer("complete a restore")
            for name, store in self._stores.items():
                store.finish_restore()
                tp = self._tps[name]
                store.attach_changelog(functools.partial(writer.send, tp.topic, tp.partition))
        self._checkpoint()

    def _active_writer(self, action: str) -> ChangelogWriter:
        """The changelog writer, which open_active and promote make before any restore starts."""
        if self._writer is None:
            raise TaskStateError(self.task, action, self.mode)
        return self._writer

    def _transactional_id(self) -> str | None:
        """Exactly-once: the task's transactional.id fences the previous owner and aborts its open
        transaction, so its uncommitted writes are never restored."""
        return f"{self.config.application_id}-{self.task}" if self.config.exactly_once else None

    def _open_stores(self) -> None:
        """Lock the task directory and create its stores (closed); a corrupt checkpoint file (or a
        FIFO or other special file in its place) is logged and removed: the stores' own offsets say
        what they hold. A directory in its place is a StatePathError. A task with no directory yet
        (new here, or its directory deleted) says so: its whole state comes from the changelogs."""
        if not (self.directory.root / str(self.task)).exists():
            log.info("task %s: no state on disk (no task directory); restoring its stores from the changelogs",
                     self.task)
        self._lock = self.directory.lock_task(self.task)
        task_dir = self._lock.directory
        rocksdb = self.config.rocksdb
        for name, spec in self._specs.items():
            window = spec.window
            if window is None:
                self._stores[name] = (InMemoryKeyValueStore(name) if spec.in_memory
                                      else RocksDBKeyValueStore(name, task_dir, rocksdb))
            elif spec.in_memory:
                self._stores[name] = InMemoryWindowStore(name, window.retention_ms, window.window_size_ms,
                                                         window.segment_interval_ms, window.retain_duplicates,
                                                         window.sessions)
            else:
                self._stores[name] = RocksDBWindowStore(name, task_dir, window.retention_ms, window.window_size_ms,
                                                        window.segment_interval_ms, rocksdb, window.retain_duplicates,
                                                        window.sessions)
        checkpoint = self.directory.checkpoint_for(self.task)
        try:
            self._checkpointed = checkpoint.read()
        except CorruptCheckpoint as exc:
            log.warning("task %s: %s; removing it (the stores' own offsets say what they hold)", self.task, exc)
            checkpoint.delete()

    def _resume_points(self) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """Per changelog: where reading resumes (past the store's own applied offset, else the
        changelog's beginning) and the changelog's end. A store that is damaged, whose offset lies
        outside the changelog's range, or that holds data but no offset, is wiped first (one log
        line each). Each range is looked up once per open."""
        starts: dict[TopicPartition, int] = {}
        ends: dict[TopicPartition, int] = {}
        for name, store in self._stores.items():
            tp = self._tps[name]
            low, high = self._reader.changelog_range(tp)
            ends[tp] = high
            applied, holds_data, wiped = self._look_into(name, store, tp)
            checkpointed = self._checkpointed.get(tp)
            if applied is not None and low - 1 <= applied < high:
                if checkpointed is not None and applied < checkpointed:
                    log.info("task %s store %s: its own offset %d is behind the checkpoint's %d; restoring %s from %d",
                             self.task, name, applied, checkpointed, tp, applied + 1)
                starts[tp] = applied + 1
                continue
            if applied is not None:
                log.warning("task %s store %s: applied offset %d is outside the changelog's range [%d, %d); "
                            "wiping it and restoring %s from the beginning", self.task, name, applied, low, high, tp)
                store.wipe()
            elif holds_data:
                log.warning("task %s store %s: holds data but no applied changelog offset; "
                            "wiping it and restoring %s from the beginning", self.task, name, tp)
                store.wipe()
            elif not wiped and checkpointed is not None and checkpointed >= 0 and isinstance(store, RocksDBStore):
                log.warning("task %s store %s: the checkpoint says it held %s up to offset %d, but it holds "
                            "nothing (its files are gone); restoring it from the beginning",
                            self.task, name, tp, checkpointed)
            starts[tp] = low
        return starts, ends

    def _look_into(self, name: str, store: StateStore, tp: TopicPartition) -> tuple[int | None, bool, bool]:
        """(applied offset, holds data, wiped) of a store; a damaged one is wiped (logged): it
        holds nothing now, and its changelog restores it."""
        try:
            return (*_offset_and_data(store), False)
        except StoreCorrupted as exc:
            log.warning("task %s store %s: %s: %s; wiping it and restoring %s from the beginning",
                        self.task, name, exc.path, exc.reason, tp)
            store.wipe()
            return None, False, True

    def _by_tp(self) -> dict[TopicPartition, StateStore]:
        return {self._tps[name]: store for name, store in self._stores.items()}

    # -- processing --------------------------------------------------------------------------
    def store(self, name: str) -> StateStore:
        self._require(f"use store {name}", Mode.ACTIVE, Mode.STANDBY, Mode.RESTORING)
        return self._stores[name]

    def kv_store(self, name: str) -> KeyValueStore:
        """`store(name)` as the key-value store it must be (TypeError if it is a window store)."""
        store = self.store(name)
        if not isinstance(store, KeyValueStore):
            raise TypeError(f"task {self.task}: store {name} is a {type(store).__name__}, not a key-value store")
        return store

    def window_store(self, name: str) -> WindowStore:
        """`store(name)` as the window store it must be (TypeError if it is a key-value store)."""
        store = self.store(name)
        if not isinstance(store, WindowStore):
            raise TypeError(f"task {self.task}: store {name} is a {type(store).__name__}, not a window store")
        return store

    @contextlib.contextmanager
    def reading(self, wait: bool = True) -> Iterator[Mapping[str, StateStore] | None]:
        """For a reader on another thread (interactive queries): the stores, which stay open and
        see no commit land until the block ends; None while the task restores or is closed. Keep
        the block short: opening, closing and committing wait for it. `wait=False` raises
        TaskStateBusy rather than wait for them (a reopen after a restore can take seconds)."""
        if not self._guard.acquire(blocking=wait):
            raise TaskStateBusy(f"task {self.task}: its stores are being opened, closed or committed to")
        try:
            yield dict(self._stores) if self.mode in (Mode.ACTIVE, Mode.STANDBY) else None
        finally:
            self._guard.release()

    @property
    def changelogs(self) -> frozenset[TopicPartition]:
        """The changelog partitions of the task's stores."""
        return frozenset(self._tps.values())

    @property
    def offsets(self) -> dict[TopicPartition, int]:
        """The last changelog offset each open store contains (its own record of it)."""
        found = {}
        for name, store in self._stores.items():
            if store.is_open and (offset := store.applied_offset()) is not None:
                found[self._tps[name]] = offset
        return found

    def offset_sum(self) -> int:
        return offset_sum(self.offsets)

    @property
    def produce_seconds(self) -> float:
        """Seconds this task's producer calls took so far (the batch timings' produce share)."""
        return 0.0 if self._writer is None else self._writer.produce_s

    def send(self, topic: str, records: Iterable[tuple[bytes | None, bytes | None, int]]) -> None:
        """Records (key, value, timestamp) for a sink or repartition topic, through the task's
        producer (inside its transaction under exactly-once); partitioned by key."""
        self._require("send records", Mode.ACTIVE)
        self._active_writer("send records").send_many(topic, records)

    def rollback(self) -> None:
        """A failed batch: every store drops its uncommitted writes, and the producer what it can
        (the whole open transaction under exactly-once). The stores stay as of the last commit."""
        self._require("roll back", Mode.ACTIVE)
        for store in self._stores.values():
            store.rollback()
        self._active_writer("roll back").abort()

    def commit(self, input_offsets: Mapping[TopicPartition, int] | None = None, group_metadata: object = None) -> None:
        """The commit point: changelog durable, then each store's overlay with its changelog offset,
        then the checkpoint. Exactly-once: `input_offsets` are committed for the consumer group of
        `group_metadata` in the same transaction."""
        self._require("commit", Mode.ACTIVE)
        written = self._active_writer("commit").commit(input_offsets, group_metadata)
        with self._guard:
            for name, store in self._stores.items():
                store.commit(written.get(self._tps[name]))
        for store in self._stores.values():
            store.sync()
        self._checkpoint()

    def checkpoint(self) -> None:
        """Make what the stores hold durable and checkpoint it (standbys do this periodically)."""
        self._require("checkpoint", Mode.STANDBY, Mode.ACTIVE)
        self._checkpoint()

    def _checkpoint(self) -> None:
        for store in self._stores.values():
            if store.is_open:
                store.sync()
        self.directory.checkpoint_for(self.task).write(self.offsets)

    def lag(self) -> int:
        """Standby: offsets between the read positions and the changelogs' current ends."""
        self._require("report a standby lag", Mode.STANDBY)
        return self._reader.lag(self.task)

    # -- closing -----------------------------------------------------------------------------
    def close(self, clean: bool = True) -> None:
        """Clean: commit (active) or checkpoint (standby), then release everything. Dirty: drop
        uncommitted writes (purged from the producer too) and abort the open transaction; the
        checkpoint stays as it was. Closing a closed task does nothing."""
        if self.mode is Mode.CLOSED:
            return
        committed = False
        try:
            if clean and self.mode is Mode.STANDBY:
                self._checkpoint()
            elif clean and self.mode is Mode.ACTIVE:
                self.commit()
                committed = True
            elif self._writer is not None:
                try:
                    self._writer.abort()
                except Exception as exc:  # noqa: BLE001 - fenced or broker gone: the txn times out
                    log.warning("task %s: aborting the changelog transaction failed: %s", self.task, exc)
        finally:
            with self._guard:
                self.mode = Mode.CLOSED
                self._reader.remove(self.task)
                for store in self._stores.values():
                    store.close()
            try:
                if self._writer is not None:
                    self._writer.close(discard=not committed)
                    self._writer = None
            finally:
                if self._lock is not None:  # whatever the producer did: a task left locked never reopens
                    self._lock.release()
                    self._lock = None


def _offset_and_data(store: StateStore) -> tuple[int | None, bool]:
    """(applied offset, holds data) of a store that may be closed; a closed RocksDB store is opened
    only if its files exist, and closed again (so a restore can open it with bulk options)."""
    if store.is_open:
        return store.applied_offset(), not store.is_empty()
    if isinstance(store, RocksDBStore) and not store.exists:
        return None, False
    store.open()
    try:
        return store.applied_offset(), not store.is_empty()
    finally:
        if isinstance(store, RocksDBStore):
            store.close()
