"""KTable#suppress, record by record as Kafka's KTableSuppressProcessor over its time-ordered buffer
(see streams_rt.topology.suppress). The buffer lives in one key-value store, so its changelog,
restore and standbys are the store's: entries under `0x00 <buffer time> <key>` (iterated in buffer
time, then key bytes, the order Kafka evicts in), each key's buffer time under `0x01 <key>` (a key
updated while buffered keeps its place). An entry holds the latest update's timestamp and value."""

from __future__ import annotations

import struct
from typing import Any

from streams_rt.state.stores import KeyValueStore
from streams_rt.state.stores.typed import serialized_key
from streams_rt.tasks.execution.base import Exec, UserCodeError
from streams_rt.tasks.execution.chunk import Chunk, Rec
from streams_rt.topology.suppress import BufferFull, Suppress

_TIME = struct.Struct(">Q")  # buffer times as unsigned, shifted by 2**63 so negative times sort first
_SHIFT = 2**63
_ENTRY, _INDEX, _ENTRIES_END = b"\x00", b"\x01", b"\x01"
_STAMP = struct.Struct(">q")


class SuppressBufferFull(RuntimeError):
    """A bounded buffer that shuts down when full is over its limit (Kafka's StreamsException)."""


def _time_bytes(time: int) -> bytes:
    return _TIME.pack(time + _SHIFT)


def buffered(store: KeyValueStore) -> list[tuple[int, bytes, bytes]]:
    """(buffer time, key bytes, entry) of every buffered update, in eviction order."""
    return [(_TIME.unpack_from(k, 1)[0] - _SHIFT, k[1 + _TIME.size:], v)
            for k, v in store.range(_ENTRY, _ENTRIES_END)]


def buffer_summary(store: KeyValueStore) -> list[tuple[str, int]]:
    """What the oracle compares of a buffer (Kafka's exposes no iteration): how many updates it holds
    and the earliest buffer time, nothing when empty."""
    held = buffered(store)
    return [("records", len(held)), ("min_time", held[0][0])] if held else []


class SuppressExec(Exec):
    def __init__(self, name: str, op: Suppress, buffer: KeyValueStore) -> None:
        super().__init__(name)
        self.op, self.buffer = op, buffer

    def process(self, chunk: Chunk) -> None:
        for record in chunk.rows():
            self._one(record)

    def _one(self, record: Rec) -> None:
        op = self.op
        key, value, timestamp = record[0], record[1], record[2]
        self.stream_time_ms = max(self.stream_time_ms, timestamp)
        try:
            key_bytes = serialized_key(op.key_serde, key)
            data = op.value_serde.serialize(value)
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e
        index = _INDEX + key_bytes
        placed = self.buffer.get(index)
        if placed is None:
            placed = _time_bytes(key.end if op.final_results else timestamp)
            self.buffer.put(index, placed)
        entry = _STAMP.pack(timestamp) + (b"" if data is None else b"\x01" + data)
        self.buffer.put(_ENTRY + placed + key_bytes, entry)
        self._evict(record, self.stream_time_ms - op.wait_ms)

    def _evict(self, record: Rec, expiry: int) -> None:
        """Emit (in buffer order) what has waited long enough, then, if a bounded buffer is still
        over its limit, emit early or fail."""
        held = buffered(self.buffer)
        due = 0
        while due < len(held) and held[due][0] <= expiry:
            due += 1
        limit = self.op.buffer.max_records
        if limit is not None and len(held) - due > limit:
            if self.op.buffer.when_full is BufferFull.SHUT_DOWN:
                raise SuppressBufferFull(f"{self.name}: the suppress buffer is over its limit of {limit} records "
                                         f"({len(held) - due} buffered)")
            due = len(held) - limit
        rows = []
        for time, key_bytes, entry in held[:due]:
            self.buffer.put(_ENTRY + _time_bytes(time) + key_bytes, None)
            self.buffer.put(_INDEX + key_bytes, None)
            value = self.op.value_serde.deserialize(entry[9:]) if len(entry) > 8 else None
            if value is None and self.op.final_results:
                continue  # a window's final result is never a delete (Kafka drops these)
            key: Any = self.op.key_serde.deserialize(key_bytes)
            rows.append((key, value, _STAMP.unpack_from(entry)[0], record[3]))
        self.forward_rows(rows)
