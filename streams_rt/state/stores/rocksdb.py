"""The RocksDB backend every persistent store shares: one database in `<task dir>/rocksdb/<name>`,
bulk-load options for restores, durability before checkpoints, and the applied changelog offset
kept in its own column family, written in the same WriteBatch as the data it describes."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import rocksdict

from streams_rt.state.errors import StoreClosedError
from streams_rt.state.stores.base import StateStore
from streams_rt.state.stores.rocksdb_options import (
    LEVEL0_SLOWDOWN_WRITES_TRIGGER,
    RocksDBConfigSetter,
    restore_options,
    store_options,
)

log = logging.getLogger(__name__)

OFFSETS_FAMILY = "streams-rt-offsets"
_OFFSET_KEY = b"changelog"

_WAL_OFF = rocksdict.WriteOptions()
_WAL_OFF.disable_wal = True
_WAL_ON = rocksdict.WriteOptions()


def encode_offset(offset: int) -> bytes:
    return offset.to_bytes(8, "big", signed=True)


class RocksDBStore(StateStore):
    """The RocksDB plumbing of a store; kinds add their column families and reads."""

    def __init__(self, name: str, task_dir: Path, config_setter: RocksDBConfigSetter | None = None) -> None:
        super().__init__(name)
        self.path = task_dir / "rocksdb" / name
        self._setter = config_setter
        self._db: rocksdict.Rdict | None = None
        self._offsets: rocksdict.ColumnFamily | None = None
        self._unlogged = False  # restore/standby writes not yet flushed to SST files
        self._bulk = False  # opened with the restore options: `finish_restore` must follow

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, bulk: bool = False) -> None:
        """Open (or reopen) the database; `bulk` selects the restore-tuned options."""
        self.close()
        self.path.mkdir(parents=True, exist_ok=True)
        options = (restore_options if bulk else store_options)(self.name, self._setter)
        self._db = self._open_db(str(self.path), options)
        self._offsets = self._db.get_column_family_handle(OFFSETS_FAMILY)
        self._bulk = bulk

    def _open_db(self, path: str, options: rocksdict.Options) -> rocksdict.Rdict:
        # Explicit column families: otherwise rocksdict reuses the options stored on disk, and a
        # store last opened for restore would come back with the restore memtable.
        return rocksdict.Rdict(path, options, column_families={"default": options, OFFSETS_FAMILY: options})

    def close(self) -> None:
        self._pending = {}
        self._offsets = None
        if self._db is not None:
            self._db.close()
            self._db = None

    def wipe(self) -> None:
        reopen = self._db is not None
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        if reopen:
            self.open()

    @property
    def is_open(self) -> bool:
        return self._db is not None

    @property
    def exists(self) -> bool:
        """Whether the store's files are on disk (a closed store can be asked)."""
        return self.path.exists()

    @property
    def db(self) -> rocksdict.Rdict:
        if self._db is None:
            raise StoreClosedError(f"store {self.name} is closed ({self.path})")
        return self._db

    def is_empty(self) -> bool:
        return not any(next(iter(family.keys()), None) is not None for family in self._data_families())

    def applied_offset(self) -> int | None:
        raw = self.db.get_column_family(OFFSETS_FAMILY).get(_OFFSET_KEY)
        return None if raw is None else int.from_bytes(raw, "big", signed=True)

    def _data_families(self) -> list[rocksdict.Rdict]:
        """Every column family holding data (window stores add one per segment)."""
        return [self.db]

    def _record_offset(self, batch: rocksdict.WriteBatch, offset: int | None) -> None:
        if offset is not None:
            batch.put(_OFFSET_KEY, encode_offset(offset), self._offsets)

    # -- writes ------------------------------------------------------------------------------
    def _write_logged(self, batch: rocksdict.WriteBatch) -> None:
        """A commit: WAL on, so a kill -9 keeps it."""
        self.db.write(batch, _WAL_ON)

    def _write_unlogged(self, batch: rocksdict.WriteBatch) -> None:
        """Changelog records: the changelog is the log, `sync` flushes them before a checkpoint."""
        self.db.write(batch, _WAL_OFF)
        self._unlogged = True

    def sync(self) -> None:
        if self._unlogged:
            # Changelog writes skip the WAL: every column family's memtable must reach SST files,
            # the data first and the offset that describes it last, so a crash in between leaves
            # the offset behind the data (replayed, idempotent), never ahead of it. The offsets
            # family never flushes on its own: its memtable holds a few bytes per batch, and
            # without the WAL no log size limit forces it (RocksDB's atomic flush would also do,
            # at about twice the restore's flush cost, measured).
            for family in (*self._data_families(), self.db.get_column_family(OFFSETS_FAMILY)):
                family.flush()
            self._unlogged = False
        self.db.flush_wal(True)

    # -- restore -----------------------------------------------------------------------------
    def begin_restore(self) -> None:
        if not self.is_open:
            self.open(bulk=True)

    def finish_restore(self) -> None:
        """After a bulk restore: flush, compact any column family whose L0 the restore filled to
        RocksDB's write-slowdown trigger (else the first commits would stall behind that
        compaction), and reopen with the processing options."""
        if not self._bulk or self._db is None:
            super().finish_restore()
            return
        self.sync()
        self._compact_crowded_level0()
        self.open()

    def _compact_crowded_level0(self) -> None:
        # A separate frame on purpose: a column family view left alive keeps RocksDB's LOCK held
        # and the reopen fails.
        for family in self._data_families():
            level0 = family.property_int_value("rocksdb.num-files-at-level0") or 0
            if level0 >= LEVEL0_SLOWDOWN_WRITES_TRIGGER:
                started = time.perf_counter()
                family.compact_range(None, None)
                log.info("store %s: compacted %d L0 files left by the restore in %.2f s",
                         self.name, level0, time.perf_counter() - started)
