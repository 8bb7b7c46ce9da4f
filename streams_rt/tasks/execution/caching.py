"""Record caches in front of the aggregation and table stores (Kafka Streams' caching, bounded by
`statestore.cache.max.bytes`): repeated updates of a key between flushes collapse into one before
they reach the store, its changelog and the downstream nodes. A flush (at the end of every batch, or
when the task's caches outgrow their budget) writes each dirty entry to the store and forwards it.
With a budget of 0 every update goes through at once.

Entries hold deserialized keys and values (serialized once, at flush); their size is estimated from
the objects, which is what the cache costs in memory."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from streams_rt.state.stores import KeyValueStore, WindowStore
from streams_rt.state.stores.typed import serialized_key
from streams_rt.topology import Serde, Windowed

ENTRY_OVERHEAD_BYTES = 120  # dict slot, tuple, timestamp int

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
    def __init__(self, task_cache: TaskCache, forward: Forward | None) -> None:
        self._task = task_cache
        self._forward = forward
        self.dirty: dict[Any, tuple[Any, int]] = {}
        task_cache.caches.append(self)

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
            self._write(cache_key, value)
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
        for cache_key, (value, _) in entries.items():
            self._write(cache_key, value)
        if self._forward is not None:
            self._forward([self._record(k, v, ts) for k, (v, ts) in entries.items()])

    def _write(self, cache_key: Any, value: Any) -> None:
        raise NotImplementedError

    def _record(self, cache_key: Any, value: Any, timestamp: int) -> Rec:
        raise NotImplementedError


class CachedKeyValue(_Cache):
    """A key-value store seen through its serdes and the task's cache."""

    def __init__(self, store: KeyValueStore, keys: Serde[Any], values: Serde[Any], task_cache: TaskCache,
                 forward: Forward | None = None) -> None:
        super().__init__(task_cache, forward)
        self.store, self.keys, self.values = store, keys, values

    def get(self, key: Any) -> Any:
        hit = self.dirty.get(key)
        if hit is not None:
            return hit[0]
        return self.load(key)

    def load(self, key: Any) -> Any:
        """The store's value (uncommitted writes included), past the cache."""
        return self.values.deserialize(self.store.get(serialized_key(self.keys, key)))

    def put(self, key: Any, value: Any, timestamp: int) -> None:
        """None deletes."""
        self._put(key, value, timestamp)

    def _write(self, cache_key: Any, value: Any) -> None:
        self.store.put(serialized_key(self.keys, cache_key), self.values.serialize(value))

    def _record(self, cache_key: Any, value: Any, timestamp: int) -> Rec:
        return (cache_key, value, timestamp, -1)


class CachedWindows(_Cache):
    """A window store seen through its serdes and the task's cache; entries are keyed by
    (key, window start) and forwarded with a `Windowed` key."""

    def __init__(self, store: WindowStore, keys: Serde[Any], values: Serde[Any], task_cache: TaskCache,
                 forward: Forward | None = None) -> None:
        super().__init__(task_cache, forward)
        self.store, self.keys, self.values = store, keys, values

    def get(self, key: Any, window_start: int) -> Any:
        hit = self.dirty.get((key, window_start))
        if hit is not None:
            return hit[0]
        found = self.store.fetch(serialized_key(self.keys, key), window_start, window_start)
        return self.values.deserialize(found[0][1]) if found else None

    def put(self, key: Any, window_start: int, value: Any, timestamp: int) -> None:
        self._put((key, window_start), value, timestamp)

    def _write(self, cache_key: Any, value: Any) -> None:
        key, start = cache_key
        self.store.put(serialized_key(self.keys, key), self.values.serialize(value), start)

    def _record(self, cache_key: Any, value: Any, timestamp: int) -> Rec:
        key, start = cache_key
        return (Windowed(key, start, start + self.store.window_size_ms), value, timestamp, -1)
