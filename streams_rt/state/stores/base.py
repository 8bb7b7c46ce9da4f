"""What every store shares: one RocksDB directory, a per-commit overlay of uncommitted writes, and
the changelog they are logged to.

Writes go to the overlay (read back by the store's lookups) and to the changelog producer; `commit`
writes the overlay as one WriteBatch. So RocksDB only ever holds committed data, and a crash
between commits leaves nothing to undo. Restore and standby updates bypass the overlay and write
changelog records straight into RocksDB in bulk.
"""

from __future__ import annotations

import logging
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path

import rocksdict
from confluent_kafka import Message

from streams_rt.state.errors import ChangelogError, StoreClosedError
from streams_rt.state.stores.rocksdb_options import (
    LEVEL0_SLOWDOWN_WRITES_TRIGGER,
    RocksDBConfigSetter,
    restore_options,
    store_options,
)

log = logging.getLogger(__name__)

# (key, value or None for a delete); bound to the store's changelog topic and partition.
ChangelogSend = Callable[[bytes, bytes | None], None]

_WAL_OFF = rocksdict.WriteOptions()
_WAL_OFF.disable_wal = True
_WAL_ON = rocksdict.WriteOptions()


class RocksDBStore(ABC):
    """A named store of one task, in `<task dir>/rocksdb/<name>`."""

    def __init__(self, name: str, task_dir: Path, config_setter: RocksDBConfigSetter | None = None) -> None:
        self.name = name
        self.path = task_dir / "rocksdb" / name
        self._setter = config_setter
        self._db: rocksdict.Rdict | None = None
        self._pending: dict[bytes, bytes | None] = {}
        self._send: ChangelogSend | None = None
        self._unlogged = False  # restore/standby writes not yet flushed to SST files
        self._bulk = False  # opened with the restore options: `end_bulk_load` must follow

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, bulk: bool = False) -> None:
        """Open (or reopen) the database; `bulk` selects the restore-tuned options."""
        self.close()
        self.path.mkdir(parents=True, exist_ok=True)
        options = (restore_options if bulk else store_options)(self.name, self._setter)
        self._db = self._open_db(str(self.path), options)
        self._bulk = bulk

    def _open_db(self, path: str, options: rocksdict.Options) -> rocksdict.Rdict:
        # Explicit column families: otherwise rocksdict reuses the options stored on disk, and a
        # store last opened for restore would come back with the restore memtable.
        return rocksdict.Rdict(path, options, column_families={"default": options})

    def close(self) -> None:
        """Close; uncommitted writes are dropped (committing first is the task's job)."""
        self._pending = {}
        if self._db is not None:
            self._db.close()
            self._db = None

    def wipe(self) -> None:
        """Delete the store's files (dropping uncommitted writes) and reopen it empty."""
        reopen = self._db is not None
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        if reopen:
            self.open()

    @property
    def is_open(self) -> bool:
        return self._db is not None

    @property
    def bulk_loading(self) -> bool:
        """Open with the restore options (`open(bulk=True)`), not yet ended by `end_bulk_load`."""
        return self._db is not None and self._bulk

    @property
    def db(self) -> rocksdict.Rdict:
        if self._db is None:
            raise StoreClosedError(f"store {self.name} is closed ({self.path})")
        return self._db

    def is_empty(self) -> bool:
        """True when RocksDB holds no committed entry in any column family."""
        return not any(next(iter(family.keys()), None) is not None for family in self._column_families())

    # -- logging and commit ------------------------------------------------------------------
    def attach_changelog(self, send: ChangelogSend | None) -> None:
        """Route writes to a changelog (None: a standby, which must not be written to)."""
        self._send = send

    def _write(self, key: bytes, value: bytes | None) -> None:
        if self._send is None:
            raise StoreClosedError(f"store {self.name} is read-only here (standby or not initialised)")
        self._send(key, value)
        self._pending[key] = value

    def commit(self) -> None:
        """Apply the overlay to RocksDB as one atomic WriteBatch (WAL on: a kill -9 keeps it)."""
        if not self._pending:
            return
        self._commit_pending(self._pending)
        self._pending = {}

    @abstractmethod
    def _commit_pending(self, pending: dict[bytes, bytes | None]) -> None: ...

    def sync(self) -> None:
        """Make everything committed so far durable before a checkpoint names it."""
        if self._unlogged:
            # Changelog writes skip the WAL: every column family's memtable (window segments are
            # families of their own) must reach SST files. The views die with this frame (see
            # `_compact_crowded_level0`).
            for family in self._column_families():
                family.flush()
            self._unlogged = False
        self.db.flush_wal(True)

    # -- restore -----------------------------------------------------------------------------
    def end_bulk_load(self) -> None:
        """After a restore with `open(bulk=True)`: flush, compact any column family whose L0 the
        restore filled to RocksDB's write-slowdown trigger (else the first commits would stall behind
        that compaction), and reopen with the processing options."""
        self.sync()
        self._compact_crowded_level0()
        self.open()

    def _compact_crowded_level0(self) -> None:
        # A separate frame on purpose: a column family view left alive keeps RocksDB's LOCK held
        # and the reopen fails.
        for family in self._column_families():
            level0 = family.property_int_value("rocksdb.num-files-at-level0") or 0
            if level0 >= LEVEL0_SLOWDOWN_WRITES_TRIGGER:
                started = time.perf_counter()
                family.compact_range(None, None)
                log.info("store %s: compacted %d L0 files left by the restore in %.2f s",
                         self.name, level0, time.perf_counter() - started)

    def _column_families(self) -> list[rocksdict.Rdict]:
        """Every column family holding data (window stores add one per segment)."""
        return [self.db]

    @abstractmethod
    def apply_changelog(self, messages: Sequence[Message]) -> None:
        """Write a batch of changelog records (keys never null) into RocksDB without the WAL; the
        caller calls `sync` before checkpointing."""

    def _write_unlogged(self, batch: rocksdict.WriteBatch) -> None:
        self.db.write(batch, _WAL_OFF)
        self._unlogged = True

    def _write_logged(self, batch: rocksdict.WriteBatch) -> None:
        self.db.write(batch, _WAL_ON)


def raise_for_error(message: Message) -> None:
    """A consumed record with a null key is an event or an error: never skip it silently."""
    error = message.error()
    if error is not None:
        raise ChangelogError(message.topic() or "?", message.partition(), f"consume failed: {error}")
    raise ChangelogError(
        message.topic() or "?", message.partition(), f"record at offset {message.offset()} has a null key"
    )
