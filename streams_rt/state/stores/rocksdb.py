"""The RocksDB backend every persistent store shares: one database in `<task dir>/rocksdb/<name>`,
bulk-load options for restores, durability before checkpoints, the applied changelog offset kept in
its own column family (written in the same WriteBatch as the data it describes), and damage found
wherever RocksDB reports it.

Every read checks RocksDB's status, and every failure RocksDB reports becomes a typed error:
`StoreCorrupted` for damage a wipe and a restore from the changelog repair (a checksum mismatch, a
file that is missing, truncated or not a regular file), `StatePathError` for what no wipe repairs
(no permission, a full or read-only file system). When a read or a write finds damage, the store
leaves a marker file in its directory, so the next open anywhere wipes it even if the damage lies
where an open does not look.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn, cast

import rocksdict

from streams_rt.atomic_file import atomic_write_bytes
from streams_rt.state.errors import StateError, StatePathError, StoreClosedError, StoreCorrupted
from streams_rt.state.paths import ensure_directory, file_kind, read_regular_file
from streams_rt.state.stores.base import StateStore
from streams_rt.state.stores.rocksdb_options import (
    DEFAULT_SETTINGS,
    LEVEL0_SLOWDOWN_WRITES_TRIGGER,
    RocksDBSettings,
    restore_options,
    store_options,
)

log = logging.getLogger(__name__)

OFFSETS_FAMILY = "streams-rt-offsets"
_OFFSET_KEY = b"changelog"
# Left in the store's directory when a read or write found damage; the next open wipes the store.
DAMAGE_MARKER = "STREAMS-RT-DAMAGED"
# A scan reads this many entries through a raw iterator (four calls an entry, its status checked)
# before it switches to items() (one call an entry) for the rest: short scans stay as cheap as
# before, long ones pay one probe at their end.
RAW_SCAN_ENTRIES = 32

_WAL_OFF = rocksdict.WriteOptions()
_WAL_OFF.disable_wal = True  # type: ignore[method-assign, assignment]  # a property; rocksdict's stub says a method
_WAL_ON = rocksdict.WriteOptions()

# RocksDB IO errors that a wipe and a restore repair (the data is gone or unreadable where it lies)
# and those it does not (the file system refuses).
_DAMAGE_IO = ("No such file or directory", "Input/output error")
_PATH_IO = ("Permission denied", "Read-only file system", "No space left on device", "Disk quota exceeded")
_FILE_NAME = r"/([\w.-]*\w)"


def encode_offset(offset: int) -> bytes:
    return offset.to_bytes(8, "big", signed=True)


class RocksDBStore(StateStore):
    """The RocksDB plumbing of a store; kinds add their column families and reads. `task` is the
    task directory's name, which errors name."""

    def __init__(self, name: str, task_dir: Path, settings: RocksDBSettings = DEFAULT_SETTINGS) -> None:
        super().__init__(name)
        self.path = task_dir / "rocksdb" / name
        self.task = task_dir.name
        self._settings = settings
        self._db: rocksdict.Rdict | None = None
        # The offsets family, as a handle for write batches and as a view for reads. The view is
        # kept open: rocksdict flushes a column family whenever a view of it is dropped, which
        # made every commit (its checkpoint reads the offset) write an SST file and a new WAL.
        self._offsets: rocksdict.ColumnFamily | None = None
        self._offsets_view: rocksdict.Rdict | None = None
        self._unlogged = False  # bulk restore writes not yet flushed to SST files
        self._bulk = False  # opened with the restore options: `finish_restore` must follow

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, bulk: bool = False) -> None:
        """Open (or reopen) the database; `bulk` selects the restore-tuned options. StoreCorrupted
        if its files are damaged or missing, StatePathError if its path cannot be used."""
        self.close()
        self._check_files()
        options = (restore_options if bulk else store_options)(self.name, self._settings)
        try:
            self._db = self._open_db(str(self.path), options)
            self._offsets = self._db.get_column_family_handle(OFFSETS_FAMILY)
            self._offsets_view = self._db.get_column_family(OFFSETS_FAMILY)
        except Exception as exc:  # noqa: BLE001 - rocksdict raises plain Exceptions: typed below
            self.close()
            self._fail(exc, mark=False)  # an open finds the same damage again: no marker needed
        self._bulk = bulk

    def _open_db(self, path: str, options: rocksdict.Options) -> rocksdict.Rdict:
        # Explicit column families: otherwise rocksdict reuses the options stored on disk, and a
        # store last opened for restore would come back with the restore memtable.
        return rocksdict.Rdict(path, options, column_families={"default": options, OFFSETS_FAMILY: options})

    def _check_files(self) -> None:
        """Before RocksDB opens the directory: it must be a directory of regular files (RocksDB and
        rocksdict would block on a FIFO; RocksDB makes no subdirectories), not marked damaged, and
        not without a CURRENT file while it has a MANIFEST (RocksDB would start a new database
        among the old files)."""
        ensure_directory(self.path)
        try:
            entries = list(os.scandir(self.path))
        except OSError as exc:
            raise StatePathError(self.path, exc.strerror or str(exc)) from exc
        for entry in entries:
            try:
                mode = entry.stat().st_mode
            except FileNotFoundError:
                raise StoreCorrupted(self.name, self.task, Path(entry.path), "is a dangling symbolic link") from None
            if not stat.S_ISREG(mode):
                raise StoreCorrupted(self.name, self.task, Path(entry.path),
                                     f"is a {file_kind(mode)}, not a regular file")
        names = {entry.name for entry in entries}
        if "CURRENT" not in names and any(name.startswith("MANIFEST-") for name in names):
            raise StoreCorrupted(self.name, self.task, self.path / "CURRENT", "is missing, but a MANIFEST is there")
        marker = self.path / DAMAGE_MARKER
        if marker.exists():
            damaged, _, reason = read_regular_file(marker).decode("utf-8", "replace").partition("\n")
            raise StoreCorrupted(self.name, self.task, Path(damaged), f"found damaged in use: {reason.strip()}")

    def close(self) -> None:
        """Close; never raises for the files: rocksdict's close flushes the memtables, but what the
        store reported durable is in the WAL or in SST files already, so a failure here is logged
        (and damage marked) rather than raised."""
        self._pending = {}
        self._offsets = self._offsets_view = None
        db, self._db = self._db, None
        if db is None:
            return
        try:
            db.close()
        except Exception as exc:  # noqa: BLE001 - rocksdict raises plain Exceptions
            typed = self._typed(exc)
            if isinstance(typed, StoreCorrupted):
                self._mark_damaged(typed)
            log.warning("store %s of task %s: closing RocksDB failed: %s", self.name, self.task, typed or exc)

    def wipe(self) -> None:
        """Delete the store's directory (StatePathError if it is not a directory, is a symbolic link
        or cannot be deleted: the path is named, nothing else is touched)."""
        reopen = self._db is not None
        self.close()
        if self.path.exists() and not self.path.is_dir():
            raise StatePathError(self.path, "is not a directory, and a store's directory must be there")
        try:
            shutil.rmtree(self.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StatePathError(Path(exc.filename or self.path), exc.strerror or str(exc)) from exc
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
        for name in self._data_families():
            if next(self._scan(self._family(name), None, None), None) is not None:
                return False
        return True

    def applied_offset(self) -> int | None:
        try:
            raw: bytes | None = self._family(OFFSETS_FAMILY).get(_OFFSET_KEY)
        except Exception as exc:  # noqa: BLE001 - rocksdict raises plain Exceptions
            self._fail(exc)
        return None if raw is None else int.from_bytes(raw, "big", signed=True)

    def _data_families(self) -> list[str]:
        """The names of the column families holding data (window stores add one per segment)."""
        return ["default"]

    def _family(self, name: str) -> rocksdict.Rdict:
        """An open column family by name (views are kept, never made per call: see _offsets)."""
        db = self.db  # StoreClosedError when closed
        if name == "default":
            return db
        if name == OFFSETS_FAMILY and self._offsets_view is not None:
            return self._offsets_view
        raise KeyError(f"store {self.name} has no column family {name!r}")

    def _record_offset(self, batch: rocksdict.WriteBatch, offset: int | None) -> None:
        if offset is not None:
            batch.put(_OFFSET_KEY, encode_offset(offset), self._offsets)

    # -- checked reads -----------------------------------------------------------------------
    # A typed error's traceback keeps the frames it passed through, with their locals, for as long
    # as the caller holds the error, and a live iterator, snapshot or column family view keeps
    # RocksDB open (and its LOCK held) after close(): a host that reopens the store while handling
    # the error would fail. So frames that can raise here hold RocksDB objects only as
    # temporaries, or delete them before raising.
    def _scan(self, family: rocksdict.Rdict, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of `family` with start <= key < end (None: unbounded) in key order, all
        read from one snapshot. A scan that an error stops raises StoreCorrupted: it never ends
        early. rocksdict's items() ends silently on an error (it never asks the iterator's status),
        so the first RAW_SCAN_ENTRIES entries come from a raw iterator whose status is checked, and
        once items() ran out, a probe on the same snapshot, placed past the last key it gave, must
        find the end with an OK status. Every name holding a RocksDB object is deleted before an
        error is raised (see above)."""
        read_opt = rocksdict.ReadOptions()  # rocksdict's iterators point at the bound: it lives as long as they do
        if end is not None:
            read_opt.set_iterate_upper_bound(end)
        snapshot = family.snapshot()
        del family
        raw = snapshot.iter(read_opt)
        if start is None:
            raw.seek_to_first()
        else:
            raw.seek(start)
        valid, key, value, step = raw.valid, raw.key, raw.value, raw.next
        for _ in range(RAW_SCAN_ENTRIES):
            if not valid():
                break
            yield key(), value()
            step()
        if not valid():
            error = self._status_error(raw)
            del snapshot, raw, valid, key, value, step
            if error is not None:
                raise error
            return
        resume: bytes = key()
        del raw, valid, key, value, step
        rest = cast(Iterator[tuple[bytes, bytes]], snapshot.items(from_key=resume, read_opt=read_opt))  # raw mode
        item: tuple[bytes, bytes] | None = None
        for item in rest:
            yield item
        del rest
        probe = snapshot.iter(read_opt)
        if item is None:
            probe.seek(resume)
        else:
            probe.seek(item[0])
            probe.next()
        error = self._status_error(probe)
        if error is None and probe.valid():
            error = self._damage(self.path, f"a scan stopped before key {probe.key()!r} without an error status")
        del snapshot, probe
        if error is not None:
            raise error

    def _status_error(self, iterator: rocksdict.RdictIter) -> StateError | None:
        """The typed error an invalid iterator stopped at (None: it reached the end); damage is
        marked on disk."""
        try:
            iterator.status()
        except Exception as exc:  # rocksdict raises plain Exceptions
            typed = self._typed(exc)
            if typed is None:
                raise
            if isinstance(typed, StoreCorrupted):
                self._mark_damaged(typed)
            typed.__cause__ = exc.with_traceback(None)
            return typed
        return None

    # -- failures ----------------------------------------------------------------------------
    def _typed(self, exc: Exception) -> StateError | None:
        """The typed error for a failure RocksDB reported (None: not about the files)."""
        message = str(exc)
        io_error = message.startswith("IO error:")
        if message.startswith("Corruption:") or (io_error and any(m in message for m in _DAMAGE_IO)):
            return StoreCorrupted(self.name, self.task, self._file_named(message), message)
        if io_error and any(m in message for m in _PATH_IO):
            return StatePathError(self._file_named(message), message)
        return None

    def _fail(self, exc: Exception, mark: bool = True) -> NoReturn:
        """Raise the typed error for `exc` (damage found by a read or write is marked on disk for
        the next open); re-raise anything that is not about the files."""
        typed = self._typed(exc)
        if typed is None:
            raise exc
        if mark and isinstance(typed, StoreCorrupted):
            self._mark_damaged(typed)
        raise typed from exc.with_traceback(None)  # see "checked reads": no frames kept

    def _damage(self, path: Path, reason: str) -> StoreCorrupted:
        error = StoreCorrupted(self.name, self.task, path, reason)
        self._mark_damaged(error)
        return error

    def _mark_damaged(self, error: StoreCorrupted) -> None:
        try:
            atomic_write_bytes(self.path / DAMAGE_MARKER, f"{error.path}\n{error.reason}\n".encode())
        except OSError as exc:
            log.warning("store %s of task %s: cannot mark it damaged (%s); %s", self.name, self.task, exc, error)

    def _file_named(self, message: str) -> Path:
        """The store's file a RocksDB message is about: named in the message (by its path, or as
        "CURRENT file"), or else in RocksDB's info log (a damaged write-ahead log is reported as
        'Corruption: checksum mismatch' alone, the log names the file); the store's directory if
        neither does."""
        if "CURRENT file" in message:
            return self.path / "CURRENT"
        pattern = re.compile(re.escape(str(self.path)) + _FILE_NAME)
        for text in (message, *reversed(self._info_log_corruption())):
            found = pattern.search(text)  # the first file a line names is the one it is about
            if found:
                return self.path / found.group(1)
        return self.path

    def _info_log_corruption(self) -> list[str]:
        """The lines of RocksDB's info log (rotated at every open) that report corruption."""
        try:
            text = read_regular_file(self.path / "LOG")[-(1 << 16):].decode("utf-8", "replace")
        except (OSError, StateError):
            return []
        return [line for line in text.splitlines() if "Corruption" in line]

    @contextlib.contextmanager
    def _typed_failures(self) -> Iterator[None]:
        """Writes, flushes and column family changes: RocksDB's failures as typed errors."""
        try:
            yield
        except StateError:
            raise
        except Exception as exc:  # noqa: BLE001 - rocksdict raises plain Exceptions
            self._fail(exc)

    # -- writes ------------------------------------------------------------------------------
    def _write_logged(self, batch: rocksdict.WriteBatch) -> None:
        """A commit: WAL on, so a kill -9 keeps it."""
        with self._typed_failures():
            self.db.write(batch, _WAL_ON)

    def _write_changelog_records(self, batch: rocksdict.WriteBatch) -> None:
        """Changelog records. A bulk restore skips the WAL: the changelog is the log, and `sync`
        flushes the memtables before a checkpoint names them. A standby (and the tail a promotion
        reads) writes the WAL: its records come a few per poll, and a promotion then needs no
        memtable flush (40-110 ms per promoted task, measured on the failover's path)."""
        if not self._bulk:
            self._write_logged(batch)
            return
        with self._typed_failures():
            self.db.write(batch, _WAL_OFF)
        self._unlogged = True

    def sync(self) -> None:
        with self._typed_failures():
            if self._unlogged:
                # Bulk restore writes skip the WAL: every column family's memtable must reach SST
                # files, the data first and the offset that describes it last, so a crash in
                # between leaves the offset behind the data (replayed, idempotent), never ahead of
                # it. The offsets family never flushes on its own: its memtable holds a few bytes
                # per batch, and without the WAL no log size limit forces it (RocksDB's atomic
                # flush would also do, at about twice the restore's flush cost, measured).
                for name in (*self._data_families(), OFFSETS_FAMILY):
                    self._family(name).flush()
                self._unlogged = False
            self.db.flush_wal(True)

    def start_sync(self) -> None:
        """Flush the data families' memtables in the background; `sync` waits for that flush,
        then flushes the offsets family (the order `sync` keeps)."""
        if not self._unlogged:
            return
        with self._typed_failures():
            for name in self._data_families():
                self._family(name).flush(False)

    def figures(self) -> dict[str, int]:
        """RocksDB's own figures under Kafka's metric names (KIP-607), summed over the data column
        families: estimated keys, memtable bytes, and the block cache every store of the host
        shares (so each store reports the whole cache, as in Kafka with a shared cache)."""
        found = dict.fromkeys(("estimate-num-keys", "cur-size-all-mem-tables"), 0)
        for name in self._data_families():
            family = self._family(name)
            for key in found:
                found[key] += family.property_int_value(f"rocksdb.{key}") or 0
        for key in ("block-cache-usage", "block-cache-capacity"):
            found[key] = self.db.property_int_value(f"rocksdb.{key}") or 0
        return found

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
        # Column family views only as temporaries: one left alive keeps RocksDB's LOCK held and
        # the reopen fails.
        with self._typed_failures():
            for name in self._data_families():
                level0 = self._family(name).property_int_value("rocksdb.num-files-at-level0") or 0
                if level0 >= LEVEL0_SLOWDOWN_WRITES_TRIGGER:
                    started = time.perf_counter()
                    self._family(name).compact_range(None, None)
                    log.info("store %s: compacted %d L0 files left by the restore in %.2f s",
                             self.name, level0, time.perf_counter() - started)
