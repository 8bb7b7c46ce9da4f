"""Key-value stores: bytes in and out (serdes sit above, `typed.py`). `KeyValueStore` holds what
every backend shares (the overlay merged into reads); `RocksDBKeyValueStore` keeps committed data in
RocksDB."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import rocksdict

from streams_rt.state.stores.base import StateStore
from streams_rt.state.stores.rocksdb import RocksDBStore
from streams_rt.state.stores.rocksdb_options import DEFAULT_SETTINGS, RocksDBSettings


def prefix_upper_bound(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with `prefix` (None: no bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class KeyValueStore(StateStore):
    """get / put / delete / range / prefix scan / all / approximate count; uncommitted writes are
    read back from the overlay."""

    def get(self, key: bytes) -> bytes | None:
        if key in self._pending:
            return self._pending[key]
        return self._committed_get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        """Write `value` (None deletes); logged to the changelog, applied at commit."""
        self._write(key, value)

    def delete(self, key: bytes) -> bytes | None:
        """Delete and return the old value; the changelog gets a tombstone."""
        old = self.get(key)
        self._write(key, None)
        return old

    def range(self, start: bytes | None = None, end: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Entries with start <= key < end in key order (None: unbounded), uncommitted writes included."""
        overlay = sorted(
            (k, v)
            for k, v in self._pending.items()
            if (start is None or k >= start) and (end is None or k < end)
        )
        committed = self._committed_range(start, end)
        return merge_overlay(committed, overlay) if overlay else committed

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self.range(prefix, prefix_upper_bound(prefix))

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        return self.range()

    def get_committed(self, key: bytes) -> bytes | None:
        """What the last commit left for `key`, without the uncommitted writes of a batch in
        flight (interactive queries read this)."""
        return self._committed_get(key)

    def range_committed(self, start: bytes | None = None, end: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """`range` over committed entries only (see `get_committed`)."""
        return self._committed_range(start, end)

    def approximate_count(self) -> int:
        """The backend's estimate of committed keys plus uncommitted writes (as Kafka: an estimate)."""
        return max(0, self._committed_estimate() + sum(1 if v is not None else -1 for v in self._pending.values()))

    @abstractmethod
    def _committed_get(self, key: bytes) -> bytes | None: ...

    @abstractmethod
    def _committed_range(self, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]: ...

    @abstractmethod
    def _committed_estimate(self) -> int: ...


class RocksDBKeyValueStore(KeyValueStore, RocksDBStore):
    def __init__(self, name: str, task_dir: Path, settings: RocksDBSettings = DEFAULT_SETTINGS) -> None:
        RocksDBStore.__init__(self, name, task_dir, settings)

    def _committed_get(self, key: bytes) -> bytes | None:
        try:
            value: bytes | None = self.db.get(key)
        except Exception as exc:  # noqa: BLE001 - rocksdict raises plain Exceptions
            self._fail(exc)  # damage: StoreCorrupted
        return value

    def _committed_range(self, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        return self._scan(self.db, start, end)

    def _committed_estimate(self) -> int:
        return self.db.property_int_value("rocksdb.estimate-num-keys") or 0

    def _commit_pending(self, pending: dict[bytes, bytes | None], changelog_offset: int | None) -> None:
        batch = write_batch(pending.keys(), pending.values())
        self._record_offset(batch, changelog_offset)
        self._write_logged(batch)

    def apply_changelog(self, keys: Sequence[bytes], values: Sequence[bytes | None], last_offset: int) -> None:
        batch = write_batch(keys, values)
        self._record_offset(batch, last_offset)
        self._write_changelog_records(batch)


def write_batch(keys: Iterable[bytes], values: Iterable[bytes | None]) -> rocksdict.WriteBatch:
    """One WriteBatch of puts and deletes (None), for commits and changelog batches alike."""
    batch = rocksdict.WriteBatch(raw_mode=True)
    put, delete = batch.put, batch.delete
    for key, value in zip(keys, values, strict=True):
        if value is None:
            delete(key)
        else:
            put(key, value)
    return batch


def merge_overlay(
    committed: Iterator[tuple[bytes, bytes]], overlay: list[tuple[bytes, bytes | None]]
) -> Iterator[tuple[bytes, bytes]]:
    """Merge two key-ordered streams; the overlay wins on equal keys and None hides the key."""
    pending = iter(overlay)
    head = next(committed, None)
    over = next(pending, None)
    while head is not None or over is not None:
        if over is None or (head is not None and head[0] < over[0]):
            assert head is not None
            yield head
            head = next(committed, None)
            continue
        if head is not None and head[0] == over[0]:
            head = next(committed, None)
        key, value = over
        if value is not None:
            yield key, value
        over = next(pending, None)
