"""Key-value store over RocksDB: bytes in and out; serdes sit above (`typed.py`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import rocksdict
from confluent_kafka import Message

from streams_rt.state.stores.base import RocksDBStore, raise_for_error


def prefix_upper_bound(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with `prefix` (None: no bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class KeyValueStore(RocksDBStore):
    """get / put / delete / range / prefix scan / all / approximate count, committed per WriteBatch."""

    def get(self, key: bytes) -> bytes | None:
        if key in self._pending:
            return self._pending[key]
        return self.db.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        """Write `value` (None deletes); logged to the changelog, applied to RocksDB at commit."""
        self._write(key, value)

    def delete(self, key: bytes) -> bytes | None:
        """Delete and return the old value; the changelog gets a tombstone."""
        old = self.get(key)
        self._write(key, None)
        return old

    def range(self, start: bytes | None = None, end: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Entries with start <= key < end in key order (None: unbounded), uncommitted writes included."""
        read_opt = rocksdict.ReadOptions()
        if end is not None:
            read_opt.set_iterate_upper_bound(end)
        committed = self.db.items(from_key=start, read_opt=read_opt) if start is not None else self.db.items(
            read_opt=read_opt
        )
        overlay = sorted(
            (k, v)
            for k, v in self._pending.items()
            if (start is None or k >= start) and (end is None or k < end)
        )
        return _merge(iter(committed), overlay)

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self.range(prefix, prefix_upper_bound(prefix))

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        return self.range()

    def approximate_count(self) -> int:
        """RocksDB's estimate of committed keys plus uncommitted writes (as Kafka: an estimate)."""
        estimate = self.db.property_int_value("rocksdb.estimate-num-keys") or 0
        return max(0, estimate + sum(1 if v is not None else -1 for v in self._pending.values()))

    def _commit_pending(self, pending: dict[bytes, bytes | None]) -> None:
        self._write_logged(_write_batch(pending.items()))

    def apply_changelog(self, messages: Sequence[Message]) -> None:
        keys = list(map(Message.key, messages))
        if None in keys:
            raise_for_error(messages[keys.index(None)])
        self._write_unlogged(_write_batch(zip(keys, map(Message.value, messages))))


def _write_batch(entries: Iterable[tuple[bytes, bytes | None]]) -> rocksdict.WriteBatch:
    """One WriteBatch of puts and deletes (None), for commits and changelog batches alike."""
    batch = rocksdict.WriteBatch(raw_mode=True)
    put, delete = batch.put, batch.delete
    for key, value in entries:
        if value is None:
            delete(key)
        else:
            put(key, value)
    return batch


def _merge(
    committed: Iterator[tuple[bytes, bytes]], overlay: list[tuple[bytes, bytes | None]]
) -> Iterator[tuple[bytes, bytes]]:
    """Merge two key-ordered streams; the overlay wins on equal keys and None hides the key."""
    pending = iter(overlay)
    head = next(committed, None)
    over = next(pending, None)
    while head is not None or over is not None:
        if over is None or (head is not None and head[0] < over[0]):
            yield head  # type: ignore[misc]
            head = next(committed, None)
            continue
        if head is not None and head[0] == over[0]:
            head = next(committed, None)
        if over[1] is not None:
            yield over  # type: ignore[misc]
        over = next(pending, None)
