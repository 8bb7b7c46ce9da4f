"""Value getters (Kafka's KTableValueGetter) made runnable: a table's current (value, timestamp) for
a key, read from its store through the task's record cache (so a read sees the latest update, as
Kafka's caching stores answer reads), or computed through the filters, mappers and joins between the
table and its stores, exactly as Kafka's getters compute them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streams_rt.tasks.execution.caching import CachedKeyValue, CachedWindows
from streams_rt.topology.joins import JoinKind
from streams_rt.topology.record import Windowed
from streams_rt.topology.stores import StoreDefinition
from streams_rt.topology.table_ops import FilterGetter, Getter, JoinGetter, MapValuesGetter, StoreGetter

Found = tuple[Any, int] | None  # (value, timestamp), or None: no value
Lookup = Callable[[Any], Found]


class StoreAccess(Protocol):
    """What a getter needs of the task (the runner): its stores' caches."""

    def kv_cache(self, name: str) -> CachedKeyValue: ...
    def window_cache(self, name: str) -> CachedWindows: ...
    def definition(self, name: str) -> StoreDefinition: ...


def lookup(getter: Getter, stores: StoreAccess) -> Lookup:
    """The getter as a function of the key (user functions in it raise as they are)."""
    if isinstance(getter, StoreGetter):
        if stores.definition(getter.store).windowed:
            windows = stores.window_cache(getter.store)
            return lambda key: windows.get_timestamped(key.key, key.start) if isinstance(key, Windowed) else None
        return stores.kv_cache(getter.store).get_timestamped
    if isinstance(getter, FilterGetter):
        return _filtered(lookup(getter.parent, stores), getter.predicate, getter.filter_not)
    if isinstance(getter, MapValuesGetter):
        return _mapped(lookup(getter.parent, stores), getter.mapper)
    return _joined(getter, lookup(getter.left, stores), lookup(getter.right, stores))


def _filtered(parent: Lookup, predicate: Callable[[Any, Any], bool], filter_not: bool) -> Lookup:
    def get(key: Any) -> Found:
        found = parent(key)
        return found if found is not None and filter_not != bool(predicate(key, found[0])) else None
    return get


def _mapped(parent: Lookup, mapper: Callable[[Any], Any]) -> Lookup:
    def get(key: Any) -> Found:
        found = parent(key)
        if found is None:
            return None
        value = mapper(found[0])
        return None if value is None else (value, found[1])
    return get


def _joined(getter: JoinGetter, left: Lookup, right: Lookup) -> Lookup:
    joiner, kind = getter.joiner, getter.kind

    def get(key: Any) -> Found:
        if kind is JoinKind.OUTER:
            this, other = left(key), right(key)
            if this is None and other is None:
                return None
            value = joiner(None if this is None else this[0], None if other is None else other[0])
            stamp = max(-1 if this is None else this[1], -1 if other is None else other[1])
            return None if value is None else (value, stamp)
        this = left(key)
        if this is None:
            return None
        other = right(key)
        if other is None:
            if kind is JoinKind.INNER:
                return None
            value, stamp = joiner(this[0], None), this[1]
        else:
            value, stamp = joiner(this[0], other[0]), max(this[1], other[1])
        return None if value is None else (value, stamp)
    return get
