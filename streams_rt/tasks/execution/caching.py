"""Record caches in front of the aggregation and table stores (Kafka Streams' caching, bounded by
`statestore.cache.max.bytes`): repeated updates of a key between flushes collapse into one before
they reach the store, its changelog and the downstream nodes. A flush (at the end of every batch, or
when the task's caches outgrow their budget) writes each dirty entry to the store and forwards it.
With a budget of 0 every update goes through at once.

Entries hold deserialized keys and values (serialized once, at flush) with their timestamps; their
size is estimated from the objects, which is what the cache costs in memory. A timestamped store
(its value serde a TimestampedSerde) keeps each entry's timestamp with its value; other stores'
entries read back with timestamp -1 (unknown)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from streams_rt.protocol.wire import INT64_MAX
from streams_rt.state.stores import KeyValueStore, WindowStore
from streams_rt.state.stores.typed import serialized_key
from streams_rt.state.stores.window import TS_BYTES
from streams_rt.topology import Serde, Serdes, Windowed
from streams_rt.topology.serdes import TimestampedSerde

ENTRY_OVERHEAD_BYTES = 120  # dict slot, tuple, timestamp int
_NO_SERDE: Serde[Any] = Serdes.bytes()  # a cache with no store reads and writes no bytes

Rec = tuple[Any, Any, int, int]  # as in nodes.py: (key, value, timestamp, source_index)
Forward = Callable[[list[Rec]], None]


class TaskCache:
    """The budget a task's caches share; when it is exceeded, all of them flush."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.caches: list[_Cache] = []

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def resize(self, max_bytes: int) -> None:
        """A new budget; what no longer fits is flushed now."""
        self.max_bytes = max_bytes
        if self.size > max_bytes:
            self.flush()

    def grew(self, delta: int) -> None:
        self.size += delta
        if self.size > self.max_bytes:
            self.flush()

    def flush(self) -> None:
        for cache in self.caches:
            cache.flush()
        self.size = 0

    def drop(self) -> None:
        """Forget every dirty entry (a failed batch: nothing of it may reach the store)."""
        for cache in self.caches:
            cache.dirty.clear()
        self.size = 0


class _Cache:
    def __init__(self, task_cache: TaskCache, forward: Forward | None, values: Serde[Any]) -> None:
        self._task = task_cache
        self._forward = forward
        self.dirty: dict[Any, tuple[Any, int]] = {}
        self.values = values
        self._timestamped = values if isinstance(values, TimestampedSerde) else None
        task_cache.caches.append(self)

    def _stored(self, value: Any, timestamp: int) -> bytes | None:
        if self._timestamped is not None:
            return self._timestamped.serialize_timestamped(value, timestamp)
        return self.values.serialize(value)

    def _read(self, data: bytes | None) -> tuple[Any, int] | None:
        """Stored bytes as (value, timestamp); None for a missing entry."""
        if data is None:
            return None
        if self._timestamped is not None:
            return self._timestamped.deserialize_timestamped(data)
        return self.values.deserialize(data), -1

    @property
    def caching(self) -> bool:
        return self._task.enabled

    def added(self, cache_key: Any, value: Any) -> None:
        """A new entry was put in `dirty` directly (a node's own loop): count it against the budget,
        which may flush every cache (then `dirty` is a new dict)."""
        self._task.grew(ENTRY_OVERHEAD_BYTES + sys.getsizeof(cache_key) + sys.getsizeof(value))

    def forward_to(self, forward: Forward) -> None:
        """Where flushed entries go (the node that writes the store forwards its updates)."""
        self._forward = forward

    def _put(self, cache_key: Any, value: Any, timestamp: int) -> None:
        if not self._task.enabled:
            self._write(cache_key, value, timestamp)
            if self._forward is not None:
                self._forward([self._record(cache_key, value, timestamp)])
            return
        dirty = self.dirty
        if cache_key in dirty:
            del dirty[cache_key]  # re-inserted at the end: the least recently written flush first
            grown = 0
        else:
            grown = ENTRY_OVERHEAD_BYTES + sys.getsizeof(cache_key)
        dirty[cache_key] = (value, timestamp)
        self._task.grew(grown + sys.getsizeof(value))

    def flush(self) -> None:
        if not self.dirty:
            return
        entries, self.dirty = self.dirty, {}
        if any(value is None for value, _ in entries.values()):
            # As Kafka's caching stores: a delete of what the store does not hold is neither written
            # nor forwarded (a window store's retention then does not move on for it either).
            entries = {k: e for k, e in entries.items() if e[0] is not None or self._holds(k)}
        for cache_key, (value, timestamp) in entries.items():
            self._write(cache_key, value, timestamp)
        if self._forward is not None:
            self._forward([self._record(k, v, ts) for k, (v, ts) in entries.items()])

    def _holds(self, cache_key: Any) -> bool:
        raise NotImplementedError

    def _write(self, cache_key: Any, value: Any, timestamp: int) -> None:
        raise NotImplementedError

    def _record(self, cache_key: Any, value: Any, timestamp: int) -> Rec:
        raise NotImplementedError


class CachedKeyValue(_Cache):
    """A key-value store seen through its serdes and the task's cache."""

    def __init__(self, store: KeyValueStore, keys: Serde[Any], values: Serde[Any], task_cache: TaskCache,
                 forward: Forward | None = None) -> None:
        super().__init__(task_cache, forward, values)
        self.store, self.keys = store, keys

    def get(self, key: Any) -> Any:
        """The key's value (None: none), cache first."""
        found = self.get_timestamped(key)
        return None if found is None else found[0]

    def get_timestamped(self, key: Any) -> tuple[Any, int] | None:
        """(value, timestamp) of the key (None: none), cache first."""
        hit = self.dirty.get(key)
        if hit is not None:
            return hit
        return self.load(key)

    def load(self, key: Any) -> tuple[Any, int] | None:
        """The store's (value, timestamp) (uncommitted writes included), past the cache."""
        return self._read(self.store.get(serialized_key(self.keys, key)))

    def put(self, key: Any, value: Any, timestamp: int) -> None:
        """None deletes."""
        self._put(key, value, timestamp)

    def _holds(self, cache_key: Any) -> bool:
        return self.store.get(serialized_key(self.keys, cache_key)) is not None

    def _write(self, cache_key: Any, value: Any, timestamp: int) -> None:
        self.store.put(serialized_key(self.keys, cache_key), self._stored(value, timestamp))

    def _record(self, cache_key: Any, value: Any, timestamp: int) -> Rec:
        return (cache_key, value, timestamp, -1)


class CachedWindows(_Cache):
    """A window store seen through its serdes and the task's cache; entries are keyed by
    (key, window start) and forwarded with a `Windowed` key."""

    def __init__(self, store: WindowStore, keys: Serde[Any], values: Serde[Any], task_cache: TaskCache,
                 forward: Forward | None = None) -> None:
        super().__init__(task_cache, forward, values)
        self.store, self.keys = store, keys

    def get_timestamped(self, key: Any, window_start: int) -> tuple[Any, int] | None:
        """(value, timestamp) of the key's window (None: none), cache first."""
        hit = self.dirty.get((key, window_start))
        if hit is not None:
            return hit
        found = self.store.fetch(serialized_key(self.keys, key), window_start, window_start)
        return self._read(found[0][1]) if found else None

    def put(self, key: Any, window_start: int, value: Any, timestamp: int) -> None:
        self._put((key, window_start), value, timestamp)

    def _holds(self, cache_key: Any) -> bool:
        key, start = cache_key
        return bool(self.store.fetch(serialized_key(self.keys, key), start, start))

    def _write(self, cache_key: Any, value: Any, timestamp: int) -> None:
        key, start = cache_key
        self.store.put(serialized_key(self.keys, key), self._stored(value, timestamp), start)

    def _record(self, cache_key: Any, value: Any, timestamp: int) -> Rec:
        key, start = cache_key
        return (Windowed(key, start, start + self.store.window_size_ms), value, timestamp, -1)


class PartialsCache(_Cache):
    """A combiner's cache: partial states per key, with no store behind them (a load finds nothing);
    a flush forwards them to the repartition topic. With caching off each record's partial goes at once."""

    def __init__(self, task_cache: TaskCache, forward: Forward | None = None) -> None:
        super().__init__(task_cache, forward, _NO_SERDE)

    def load(self, key: Any) -> tuple[Any, int] | None:
        return None

    def put(self, key: Any, partial: Any, timestamp: int) -> None:
        self._put(key, partial, timestamp)

    def _holds(self, cache_key: Any) -> bool:
        return False

    def _write(self, cache_key: Any, value: Any, timestamp: int) -> None:
        """Nothing is stored: the partial only travels on."""

    def _record(self, cache_key: Any, value: Any, timestamp: int) -> Rec:
        return (cache_key, value, timestamp, -1)


class _DirtyByKey:
    """Which dirty entries each key has, for range reads through a cache (a key's windows or
    sessions) without a scan of every dirty entry. It follows the cache's dict: a flush starts a new
    one; entries dropped with a failed batch are filtered out when read."""

    def __init__(self) -> None:
        self._of: dict[Any, tuple[Any, ...]] = {}
        self._index: dict[Any, set[Any]] = {}

    def add(self, dirty: dict[Any, Any], key: Any, entry: Any) -> None:
        if self._of is not dirty:
            self._of, self._index = dirty, {}
        self._index.setdefault(key, set()).add(entry)

    def entries(self, dirty: dict[Any, Any], key: Any) -> list[Any]:
        if self._of is not dirty:
            return []
        return [entry for entry in self._index.get(key, ()) if entry in dirty]


class CachedWindowRanges(CachedWindows):
    """A window store through the cache, with reads of a key's windows over a time range and of
    every window over a range of starts (sliding windows, emit-on-window-close)."""

    def __init__(self, store: WindowStore, keys: Serde[Any], values: Serde[Any], task_cache: TaskCache,
                 forward: Forward | None = None) -> None:
        super().__init__(store, keys, values, task_cache, forward)
        self._by_key = _DirtyByKey()

    def put(self, key: Any, window_start: int, value: Any, timestamp: int) -> None:
        super().put(key, window_start, value, timestamp)
        if self.dirty:
            self._by_key.add(self.dirty, key, (key, window_start))

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any, int]]:
        """(window start, value, timestamp) of the key's windows starting in [time_from, time_to],
        oldest first, cache first."""
        found: dict[int, tuple[Any, int] | None] = {}
        for start, data in self.store.fetch(serialized_key(self.keys, key), time_from, time_to):
            found[start] = self._read(data)
        for entry in self._by_key.entries(self.dirty, key):
            if time_from <= entry[1] <= time_to:
                hit = self.dirty[entry]
                found[entry[1]] = None if hit[0] is None else hit
        return [(start, hit[0], hit[1]) for start, hit in sorted(found.items()) if hit is not None]

    def fetch_all(self, time_from: int, time_to: int) -> list[tuple[Any, int, Any, int]]:
        """(key, window start, value, timestamp) of every window starting in [time_from, time_to], by
        start then key bytes, cache first."""
        found: dict[tuple[int, bytes], tuple[Any, Any, int] | None] = {}
        for key_bytes, start, data in self.store.fetch_all(time_from, time_to):
            read = self._read(data)
            assert read is not None
            found[(start, key_bytes)] = (self.keys.deserialize(key_bytes), *read)
        for (key, start), (value, timestamp) in self.dirty.items():
            if time_from <= start <= time_to:
                found[(start, serialized_key(self.keys, key))] = None if value is None else (key, value, timestamp)
        return [(hit[0], start, hit[1], hit[2]) for (start, _), hit in sorted(found.items()) if hit is not None]


class CachedSessions(_Cache):
    """A session store (streams_rt.state.stores.window: time is the session's end, the start its
    suffix) seen through its serdes and the task's cache; entries are keyed by (key, end, start) and
    forwarded with a `Windowed` key, stamped with the session's end."""

    def __init__(self, store: WindowStore, keys: Serde[Any], values: Serde[Any], task_cache: TaskCache,
                 forward: Forward | None = None) -> None:
        super().__init__(task_cache, forward, values)
        self.store, self.keys = store, keys
        self._by_key = _DirtyByKey()

    def find(self, key: Any, earliest_end: int, latest_start: int) -> list[tuple[int, int, Any]]:
        """(start, end, value) of the key's sessions ending at or after `earliest_end` and starting
        at or before `latest_start`, by end, cache first (Kafka's findSessions)."""
        found: dict[tuple[int, int], Any] = {}
        for end, suffix, data in self.store.fetch_entries(serialized_key(self.keys, key), earliest_end, INT64_MAX):
            start = int.from_bytes(suffix, "big")
            if start <= latest_start:
                found[(end, start)] = self.values.deserialize(data)
        for entry in self._by_key.entries(self.dirty, key):
            _, end, start = entry
            if end >= earliest_end and start <= latest_start:
                found[(end, start)] = self.dirty[entry][0]
        return [(start, end, value) for (end, start), value in sorted(found.items()) if value is not None]

    def find_ending(self, earliest_end: int, latest_end: int) -> list[tuple[Any, int, int, Any]]:
        """(key, start, end, value) of every session ending in [earliest_end, latest_end], by end,
        key bytes and start, cache first."""
        found: dict[tuple[int, bytes, int], tuple[Any, Any] | None] = {}
        for key_bytes, end, suffix, data in self.store.fetch_all_entries(earliest_end, latest_end):
            found[(end, key_bytes, int.from_bytes(suffix, "big"))] = (self.keys.deserialize(key_bytes),
                                                                       self.values.deserialize(data))
        for (key, end, start), (value, _) in self.dirty.items():
            if earliest_end <= end <= latest_end:
                found[(end, serialized_key(self.keys, key), start)] = None if value is None else (key, value)
        return [(hit[0], start, end, hit[1]) for (end, _, start), hit in sorted(found.items()) if hit is not None]

    def put(self, key: Any, start: int, end: int, value: Any) -> None:
        """None removes the session."""
        self._put((key, end, start), value, end)
        if self.dirty:
            self._by_key.add(self.dirty, key, (key, end, start))

    def _holds(self, cache_key: Any) -> bool:
        key, end, start = cache_key
        suffix = start.to_bytes(TS_BYTES, "big")
        return any(s == suffix for _, s, _ in self.store.fetch_entries(serialized_key(self.keys, key), end, end))

    def _write(self, cache_key: Any, value: Any, timestamp: int) -> None:
        key, end, start = cache_key
        data = self.values.serialize(value)
        self.store.put(serialized_key(self.keys, key), data, end, start.to_bytes(TS_BYTES, "big"))

    def _record(self, cache_key: Any, value: Any, timestamp: int) -> Rec:
        key, end, start = cache_key
        return (Windowed(key, start, end), value, end, -1)
