"""Serdes above the byte stores: the stores stay bytes in, bytes out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar

from streams_rt.state.stores.kv import KeyValueStore
from streams_rt.state.stores.window import WindowStore

K = TypeVar("K")
V = TypeVar("V")


class Serde(Protocol[V]):
    def serialize(self, value: V) -> bytes: ...
    def deserialize(self, data: bytes) -> V: ...


class TypedKeyValueStore(Generic[K, V]):
    """A KeyValueStore seen through a key serde and a value serde. Range order is the byte order of
    the serialized keys, as in Kafka."""

    def __init__(self, store: KeyValueStore, keys: Serde[K], values: Serde[V]) -> None:
        self.store, self.keys, self.values = store, keys, values

    def get(self, key: K) -> V | None:
        data = self.store.get(self.keys.serialize(key))
        return None if data is None else self.values.deserialize(data)

    def put(self, key: K, value: V | None) -> None:
        self.store.put(self.keys.serialize(key), None if value is None else self.values.serialize(value))

    def delete(self, key: K) -> V | None:
        old = self.store.delete(self.keys.serialize(key))
        return None if old is None else self.values.deserialize(old)

    def range(self, start: K | None = None, end: K | None = None) -> Iterator[tuple[K, V]]:
        lo = None if start is None else self.keys.serialize(start)
        hi = None if end is None else self.keys.serialize(end)
        for key, value in self.store.range(lo, hi):
            yield self.keys.deserialize(key), self.values.deserialize(value)

    def all(self) -> Iterator[tuple[K, V]]:
        return self.range()

    def approximate_count(self) -> int:
        return self.store.approximate_count()


class TypedWindowStore(Generic[K, V]):
    """A WindowStore seen through serdes."""

    def __init__(self, store: WindowStore, keys: Serde[K], values: Serde[V]) -> None:
        self.store, self.keys, self.values = store, keys, values

    def put(self, key: K, value: V | None, window_start: int) -> None:
        data = None if value is None else self.values.serialize(value)
        self.store.put(self.keys.serialize(key), data, window_start)

    def fetch(self, key: K, time_from: int, time_to: int) -> list[tuple[int, V]]:
        rows = self.store.fetch(self.keys.serialize(key), time_from, time_to)
        return [(start, self.values.deserialize(value)) for start, value in rows]
