"""Serdes above the byte stores: the stores stay bytes in, bytes out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar

from streams_rt.state.stores.kv import KeyValueStore
from streams_rt.state.stores.window import WindowStore

K = TypeVar("K")
V = TypeVar("V")


class Serde(Protocol[V]):
    """What the typed stores need of a serde (streams_rt.topology's serdes are ones): None passes
    through both ways (a tombstone); anything else becomes bytes and back."""

    def serialize(self, value: V | None) -> bytes | None: ...
    def deserialize(self, data: bytes | None) -> V | None: ...


def serialized_key(keys: Serde[K], key: K) -> bytes:
    """A store key's bytes: a key serde must not write None for a key."""
    data = keys.serialize(key)
    if data is None:
        raise ValueError(f"the key serde {keys!r} wrote None for the key {key!r}: a store key needs bytes")
    return data


class TypedKeyValueStore(Generic[K, V]):
    """A KeyValueStore seen through a key serde and a value serde. Range order is the byte order of
    the serialized keys, as in Kafka."""

    def __init__(self, store: KeyValueStore, keys: Serde[K], values: Serde[V]) -> None:
        self.store, self.keys, self.values = store, keys, values

    def get(self, key: K) -> V | None:
        data = self.store.get(serialized_key(self.keys, key))
        return None if data is None else self.values.deserialize(data)

    def put(self, key: K, value: V | None) -> None:
        self.store.put(serialized_key(self.keys, key), None if value is None else self.values.serialize(value))

    def delete(self, key: K) -> V | None:
        old = self.store.delete(serialized_key(self.keys, key))
        return None if old is None else self.values.deserialize(old)

    def range(self, start: K | None = None, end: K | None = None) -> Iterator[tuple[K | None, V | None]]:
        """(key, value) in key order; None only where a serde reads bytes as None."""
        lo = None if start is None else serialized_key(self.keys, start)
        hi = None if end is None else serialized_key(self.keys, end)
        for key, value in self.store.range(lo, hi):
            yield self.keys.deserialize(key), self.values.deserialize(value)

    def all(self) -> Iterator[tuple[K | None, V | None]]:
        return self.range()

    def approximate_count(self) -> int:
        return self.store.approximate_count()


class TypedWindowStore(Generic[K, V]):
    """A WindowStore seen through serdes."""

    def __init__(self, store: WindowStore, keys: Serde[K], values: Serde[V]) -> None:
        self.store, self.keys, self.values = store, keys, values

    def put(self, key: K, value: V | None, window_start: int) -> None:
        data = None if value is None else self.values.serialize(value)
        self.store.put(serialized_key(self.keys, key), data, window_start)

    def fetch(self, key: K, time_from: int, time_to: int) -> list[tuple[int, V | None]]:
        rows = self.store.fetch(serialized_key(self.keys, key), time_from, time_to)
        return [(start, self.values.deserialize(value)) for start, value in rows]
