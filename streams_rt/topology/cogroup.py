"""Cogrouped streams (KIP-150): several grouped streams, each with its own aggregator, into one
aggregate per key (or per key and window) in one store, as Kafka Streams builds it: an aggregation
node per stream (Kafka's KStreamAggregate or KStreamWindowAggregate, sharing the store), and a
pass-through node that merges their updates into one table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams_rt.topology.errors import TopologyError
from streams_rt.topology.ktable import StoreOrigin
from streams_rt.topology.nodes import Aggregate, Node, ProcessorNode
from streams_rt.topology.serdes import Serde
from streams_rt.topology.stores import StoreDefinition
from streams_rt.topology.table_ops import TablePassThrough
from streams_rt.topology.windows import TimeWindows, WindowedSerde

if TYPE_CHECKING:
    from streams_rt.topology.dsl import KGroupedStream, KTable


class CogroupedKStream:
    """`grouped.cogroup(aggregator).cogroup(other_grouped, other_aggregator)...aggregate(initializer)`:
    aggregator(key, value, aggregate) of each stream folds its records into the key's one aggregate."""

    def __init__(self, first: KGroupedStream, aggregator: Callable[[Any, Any, Any], Any]) -> None:
        self._groups: list[tuple[KGroupedStream, Callable[[Any, Any, Any], Any]]] = [(first, aggregator)]

    def cogroup(self, grouped: KGroupedStream, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        if grouped._stream._b is not self._groups[0][0]._stream._b:
            raise TopologyError("cogroup", "cannot cogroup streams of different builders")
        if any(g is grouped for g, _ in self._groups):
            raise TopologyError("cogroup", "this grouped stream is already part of the cogroup")
        self._groups.append((grouped, aggregator))
        return self

    def windowed_by(self, windows: TimeWindows) -> TimeWindowedCogroupedKStream:
        return TimeWindowedCogroupedKStream(self, windows)

    def aggregate(self, initializer: Callable[[], Any], store: str | None = None,
                  value_serde: Serde[Any] | None = None, in_memory: bool = False,
                  name: str | None = None) -> KTable:
        """One aggregate per key, starting from initializer() (records with a null key or value
        are dropped, as by every aggregation)."""
        return self._build(initializer, store, value_serde, in_memory, name, None, None)

    def _build(self, initializer: Callable[[], Any], store: str | None, value_serde: Serde[Any] | None,
               in_memory: bool, name: str | None, windows: TimeWindows | None, retention_ms: int | None) -> KTable:
        from streams_rt.topology.dsl import KTable, _source_names

        first = self._groups[0][0]
        b = first._stream._b
        store_name = store or b._name("COGROUPKSTREAM-AGGREGATE-STATE-STORE")
        values = value_serde or first.value_serde
        if windows is None:
            definition = StoreDefinition(store_name, first.key_serde, values, in_memory=in_memory, timestamped=True)
        else:
            retention = retention_ms if retention_ms is not None else windows.default_retention_ms
            if retention < windows.size_ms + windows.grace_ms:
                raise TopologyError(store_name, f"retention ({retention} ms) must be at least window size plus "
                                                f"grace ({windows.size_ms + windows.grace_ms} ms)")
            definition = StoreDefinition(store_name, first.key_serde, values, window_size_ms=windows.size_ms,
                                         retention_ms=retention, in_memory=in_memory, timestamped=True)
        b.add_state_store(definition)
        parents: list[Node] = [grouped._input(store_name)[0] for grouped, _ in self._groups]
        b._copartitioned.append(frozenset(n for parent in parents for n in _source_names(parent)))
        aggregations: list[ProcessorNode] = []
        for i, ((_, aggregator), parent) in enumerate(zip(self._groups, parents, strict=True)):
            node_name = b._name_or(name and f"{name}-cogroup-agg-{i}", "COGROUPKSTREAM-AGGREGATE")
            op = Aggregate(store_name, initializer, aggregator, windows)
            aggregations.append(b._processor(parent, "", op, (store_name,), node_name))
        merge_name = b._name_or(name and f"{name}-cogroup-merge", "COGROUPKSTREAM-MERGE")
        merge = b._processor(list(aggregations), "", TablePassThrough(), name=merge_name)
        keys = first.key_serde if windows is None else WindowedSerde(first.key_serde, windows.size_ms)
        return KTable(b, merge, store_name, keys, values, StoreOrigin(merge, store_name, tuple(aggregations)))


class TimeWindowedCogroupedKStream:
    """A cogroup's aggregates per key and time window (tumbling or hopping), keyed by `Windowed`."""

    def __init__(self, cogrouped: CogroupedKStream, windows: TimeWindows) -> None:
        self._cogrouped, self.windows = cogrouped, windows

    def aggregate(self, initializer: Callable[[], Any], store: str | None = None,
                  value_serde: Serde[Any] | None = None, retention_ms: int | None = None, in_memory: bool = False,
                  name: str | None = None) -> KTable:
        """Per window as a windowed aggregation: records later than the grace period are dropped;
        each stream's aggregation judges lateness by the stream time it has seen, as Kafka's."""
        return self._cogrouped._build(initializer, store, value_serde, in_memory, name, self.windows, retention_ms)
