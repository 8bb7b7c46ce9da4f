"""Session and sliding windowed aggregations (Kafka Streams' SessionWindowedKStream and
SlidingWindowedKStream): `stream.group_by_key().windowed_by(SessionWindows...)` or
`windowed_by(SlidingWindows...)`, then count / reduce / aggregate into a session store or a window
store; results are keyed by `Windowed(key, start, end)`. `emit_strategy(EmitStrategy.on_window_close())`
emits each window's final result once, when it closes, instead of every update (KIP-825)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from streams_rt.topology.errors import TopologyError
from streams_rt.topology.serdes import Serde, Serdes
from streams_rt.topology.stores import StoreDefinition
from streams_rt.topology.windows import (
    EmitStrategy,
    SessionWindowedSerde,
    SessionWindows,
    SlidingWindows,
    WindowedSerde,
)

if TYPE_CHECKING:
    from streams_rt.topology.dsl import KGroupedStream, KTable


@dataclass(frozen=True)
class SessionAggregate:
    """Per key and session, as Kafka's KStreamSessionWindowAggregate: `merger(key, agg1, agg2)`
    combines two sessions' aggregates when a record joins them."""

    store: str
    windows: SessionWindows
    initializer: Callable[[], Any]
    aggregator: Callable[[Any, Any, Any], Any]
    merger: Callable[[Any, Any, Any], Any]
    emit_final: bool = False


@dataclass(frozen=True)
class SlidingAggregate:
    """Per key and sliding window, as Kafka's KStreamSlidingWindowAggregate."""

    store: str
    windows: SlidingWindows
    initializer: Callable[[], Any]
    aggregator: Callable[[Any, Any, Any], Any]
    emit_final: bool = False


def _reduce_functions(reducer: Callable[[Any, Any], Any]) -> tuple[Callable[[], Any], Callable[[Any, Any, Any], Any]]:
    """Kafka's reduce as an aggregation: no aggregate (None) until the first value, then reducer(agg, value)."""
    return (lambda: None), (lambda key, value, agg: value if agg is None else reducer(agg, value))


def _count_functions() -> tuple[Callable[[], Any], Callable[[Any, Any, Any], Any]]:
    return (lambda: 0), (lambda key, value, agg: agg + 1)


class _WindowedStream:
    """What session and sliding windowed streams share: the grouped stream, the emit strategy."""

    def __init__(self, grouped: KGroupedStream) -> None:
        self._grouped = grouped
        self._emit = EmitStrategy.ON_WINDOW_UPDATE

    def emit_strategy(self, strategy: EmitStrategy) -> Self:
        """Every update of a window (default) or its final result once it closes (KIP-825)."""
        self._emit = strategy
        return self

    def _store_and_input(self, store: str | None, prefix: str) -> tuple[str, Any]:
        g = self._grouped
        name = store or g._stream._b._name(f"{prefix}-STATE-STORE")
        parent, _ = g._input(name)
        return name, parent

    def _table(self, name: str, parent: Any, prefix: str, op: Any, definition: StoreDefinition,
               key_serde: Serde[Any], values: Serde[Any], grace_ms: int) -> KTable:
        from streams_rt.topology.dsl import KTable  # the DSL module imports this one

        b = self._grouped._stream._b
        b.add_state_store(definition)
        node = b._processor(parent, prefix, op, (name,))
        table = KTable(b, node, name, key_serde, values)
        table.window_close_ms = grace_ms
        return table


class SessionWindowedStream(_WindowedStream):
    """Aggregations per key and session, into a session store (queryable by key: its sessions)."""

    def __init__(self, grouped: KGroupedStream, windows: SessionWindows) -> None:
        super().__init__(grouped)
        self.windows = windows

    def count(self, store: str | None = None, retention_ms: int | None = None, in_memory: bool = False) -> KTable:
        """Records per key and session (a null value counts, as in Kafka)."""
        initializer, aggregator = _count_functions()
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, lambda key, a, b: a + b, store,
                               Serdes.int64(), retention_ms, in_memory)

    def reduce(self, reducer: Callable[[Any, Any], Any], store: str | None = None, retention_ms: int | None = None,
               in_memory: bool = False) -> KTable:
        """reducer(aggregate, value); merging two sessions reduces the later one into the earlier."""
        initializer, aggregator = _reduce_functions(reducer)
        return self._aggregate("KSTREAM-REDUCE", initializer, aggregator,
                               lambda key, a, b: aggregator(key, b, a), store, self._grouped.value_serde,
                               retention_ms, in_memory)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  merger: Callable[[Any, Any, Any], Any], store: str | None = None,
                  value_serde: Serde[Any] | None = None, retention_ms: int | None = None,
                  in_memory: bool = False) -> KTable:
        """aggregator(key, value, aggregate) from initializer(); merger(key, agg1, agg2) when a record
        joins two sessions."""
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, merger, store,
                               value_serde or self._grouped.value_serde, retention_ms, in_memory)

    def _aggregate(self, prefix: str, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                   merger: Callable[[Any, Any, Any], Any], store: str | None, values: Serde[Any],
                   retention_ms: int | None, in_memory: bool) -> KTable:
        w, g = self.windows, self._grouped
        name, parent = self._store_and_input(store, prefix)
        retention = retention_ms if retention_ms is not None else w.default_retention_ms
        if retention < w.gap_ms + w.grace_ms:
            raise TopologyError(name, f"retention ({retention} ms) must be at least the inactivity gap plus "
                                      f"grace ({w.gap_ms + w.grace_ms} ms)")
        definition = StoreDefinition(name, g.key_serde, values, window_size_ms=0, retention_ms=retention,
                                     in_memory=in_memory, sessions=True)
        op = SessionAggregate(name, w, initializer, aggregator, merger, self._emit is EmitStrategy.ON_WINDOW_CLOSE)
        return self._table(name, parent, prefix, op, definition, SessionWindowedSerde(g.key_serde), values,
                           w.close_delay_ms)


class SlidingWindowedStream(_WindowedStream):
    """Aggregations per key and sliding window, into a window store (window size: the time difference)."""

    def __init__(self, grouped: KGroupedStream, windows: SlidingWindows) -> None:
        super().__init__(grouped)
        self.windows = windows

    def count(self, store: str | None = None, retention_ms: int | None = None, in_memory: bool = False) -> KTable:
        """Records per key and window (records with a null value are dropped, as in Kafka)."""
        initializer, aggregator = _count_functions()
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, store, Serdes.int64(), retention_ms,
                               in_memory)

    def reduce(self, reducer: Callable[[Any, Any], Any], store: str | None = None, retention_ms: int | None = None,
               in_memory: bool = False) -> KTable:
        initializer, aggregator = _reduce_functions(reducer)
        return self._aggregate("KSTREAM-REDUCE", initializer, aggregator, store, self._grouped.value_serde,
                               retention_ms, in_memory)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  store: str | None = None, value_serde: Serde[Any] | None = None, retention_ms: int | None = None,
                  in_memory: bool = False) -> KTable:
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, store,
                               value_serde or self._grouped.value_serde, retention_ms, in_memory)

    def _aggregate(self, prefix: str, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                   store: str | None, values: Serde[Any], retention_ms: int | None, in_memory: bool) -> KTable:
        w, g = self.windows, self._grouped
        name, parent = self._store_and_input(store, prefix)
        retention = retention_ms if retention_ms is not None else w.default_retention_ms
        if retention < w.default_retention_ms:
            raise TopologyError(name, f"retention ({retention} ms) must be at least twice the time difference "
                                      f"plus grace ({w.default_retention_ms} ms)")
        definition = StoreDefinition(name, g.key_serde, values, window_size_ms=w.time_difference_ms,
                                     retention_ms=retention, in_memory=in_memory, timestamped=True)
        op = SlidingAggregate(name, w, initializer, aggregator, self._emit is EmitStrategy.ON_WINDOW_CLOSE)
        return self._table(name, parent, prefix, op, definition, WindowedSerde(g.key_serde, w.time_difference_ms),
                           values, w.grace_ms)
