"""KTable's operators (filter, filter_not, map_values, group_by, table-table joins, the foreign-key
join) and KGroupedTable (count, reduce, aggregate with a subtractor), with Kafka Streams' semantics.

Table operators pass `Change`s (new value, and the old one where asked) from node to node. Whether a
table sends old values, and whether a table read from a topic is materialized at all, are decided as
the topology grows (Kafka's enableSendingOldValues and valueGetterSupplier): a downstream operator
may need them. Each KTable has an origin that knows how, for the kind of operator that made it.

Names follow Kafka's (`KTABLE-FILTER-0000000003`, ...), every operation using up the same indexes,
so generated store and topic names are the ones Kafka Streams gives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from streams_rt.topology.changes import ChangedSerde
from streams_rt.topology.errors import TopologyError
from streams_rt.topology.joins import JoinKind
from streams_rt.topology.nodes import Node, ProcessorNode, TableSource
from streams_rt.topology.serdes import Serde, Serdes
from streams_rt.topology.stores import StoreDefinition
from streams_rt.topology.table_ops import (
    FilterGetter,
    Getter,
    JoinGetter,
    MapValuesGetter,
    StoreGetter,
    TableAggregate,
    TableFilter,
    TableJoin,
    TableJoinMerge,
    TableMapValues,
    TableSelect,
    getter_stores,
)

if TYPE_CHECKING:
    from streams_rt.topology.dsl import KTable, StreamsBuilder


class TableOrigin(Protocol):
    """What made a table, as far as its downstream operators care."""

    def enable_old_values(self, force: bool) -> bool:
        """Make the table send old values with its updates (materializing what that takes when
        `force`); False if it cannot without materializing and `force` is not set."""
        ...

    def getter(self) -> Getter:
        """How to read the table's current value for a key (materializing a source if needed)."""
        ...


@dataclass(eq=False)
class SourceOrigin:
    """Kafka's KTableSource: a topic's table, or a foreign-key join's result. Materialized in
    `definition`'s store when named, else only once a downstream operator needs it."""

    builder: StreamsBuilder
    node: ProcessorNode
    definition: StoreDefinition
    materialized: bool = False

    @property
    def queryable(self) -> str | None:
        return self.definition.name if self.materialized else None

    def materialize(self) -> None:
        if not self.materialized:
            self.materialized = True
            self.builder.add_state_store(self.definition)
            self.node.stores = (self.definition.name,)
            self.node.operation = TableSource(self.definition.name)

    def enable_old_values(self, force: bool) -> bool:
        if self.node.send_old_values:
            return True
        if not force and not self.materialized:
            return False
        self.materialize()
        self.node.send_old_values = True
        return True

    def getter(self) -> Getter:
        self.materialize()
        return StoreGetter(self.definition.name)


@dataclass(eq=False)
class StoreOrigin:
    """An aggregation's table (always materialized): its store is its view."""

    node: ProcessorNode
    store: str
    also: tuple[ProcessorNode, ...] = ()  # a cogroup's aggregations, behind its pass-through node

    def enable_old_values(self, force: bool) -> bool:
        for node in self.also or (self.node,):
            node.send_old_values = True
        return True

    def getter(self) -> Getter:
        return StoreGetter(self.store)


@dataclass(eq=False)
class DerivedOrigin:
    """A filter's or map_values' table: its own store when materialized, else its parent's values
    filtered or mapped on the fly."""

    node: ProcessorNode
    parent: KTable
    store: str | None
    view: Callable[[Getter], Getter]  # the parent's getter -> this table's

    def enable_old_values(self, force: bool) -> bool:
        if self.store is not None or self.parent._origin.enable_old_values(force):
            self.node.send_old_values = True
        return self.node.send_old_values

    def getter(self) -> Getter:
        return StoreGetter(self.store) if self.store is not None else self.view(self.parent._origin.getter())


@dataclass(eq=False)
class JoinOrigin:
    """A table-table join's result (Kafka's KTableKTableJoinMerger): its store when materialized,
    else the join computed from both sides' getters."""

    merge: ProcessorNode
    sides: tuple[ProcessorNode, ProcessorNode]
    tables: tuple[KTable, KTable]
    kind: JoinKind
    joiner: Callable[[Any, Any], Any]
    store: str | None

    def enable_old_values(self, force: bool) -> bool:
        for table in self.tables:
            table._origin.enable_old_values(True)
        for node in (*self.sides, self.merge):
            node.send_old_values = True
        return True

    def getter(self) -> Getter:
        if self.store is not None:
            return StoreGetter(self.store)
        this, other = self.tables
        return JoinGetter(self.kind, this._origin.getter(), other._origin.getter(), self.joiner)


def read_values(table: KTable, operation: str) -> Getter:
    """How `operation` reads the table's values (its getter). A session-windowed table's cannot be
    read yet (Kafka reads them through its session store's view, which is not built here): a
    clear error rather than a wrong answer."""
    getter = table._origin.getter()
    for store in getter_stores(getter):
        if table._b._stores[store].sessions:
            raise TopologyError(operation, f"reads the values of a session-windowed table (store {store}), "
                                           "which is not supported yet; join its to_stream() records instead")
    return getter


def _reverse(joiner: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda other, this: joiner(this, other)


class KTableOperations:
    """KTable's table operators (mixed into dsl.KTable)."""

    _b: StreamsBuilder
    node: Node
    store: str | None
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    _origin: TableOrigin

    # -- stateless ---------------------------------------------------------------------------------
    def filter(self, predicate: Callable[[Any, Any], bool], store: str | None = None, in_memory: bool = False,
               name: str | None = None) -> KTable:
        """The entries predicate(key, value) keeps; an update it rejects deletes the key downstream
        (a tombstone where the key was there before, or where that is not known). `store`:
        materialized in a queryable store."""
        return self._filter(predicate, False, store, in_memory, name)

    def filter_not(self, predicate: Callable[[Any, Any], bool], store: str | None = None, in_memory: bool = False,
                   name: str | None = None) -> KTable:
        """The entries predicate(key, value) rejects (see `filter`)."""
        return self._filter(predicate, True, store, in_memory, name)

    def _filter(self, predicate: Callable[[Any, Any], bool], filter_not: bool, store: str | None,
                in_memory: bool, name: str | None) -> KTable:
        node = self._b._processor(self.node, "KTABLE-FILTER", TableFilter(predicate, filter_not, store),
                                  self._materialize(store, self.value_serde, in_memory), name)
        origin = DerivedOrigin(node, self._self(), store,
                               lambda parent: FilterGetter(parent, predicate, filter_not))
        # Kafka's KTableFilter asks its parent for old values as it is made: a materialized parent
        # sends them, so rejected updates of keys that were never there send no tombstone.
        node.send_old_values = self._origin.enable_old_values(False)
        return self._table(node, store, self.key_serde, self.value_serde, origin)

    def map_values(self, mapper: Callable[[Any], Any], value_serde: Serde[Any] | None = None,
                   store: str | None = None, in_memory: bool = False, name: str | None = None) -> KTable:
        """mapper(value) for every value (a delete stays a delete). `store`: materialized."""
        values = value_serde or self.value_serde
        node = self._b._processor(self.node, "KTABLE-MAPVALUES", TableMapValues(mapper, store),
                                  self._materialize(store, values, in_memory), name)
        origin = DerivedOrigin(node, self._self(), store, lambda parent: MapValuesGetter(parent, mapper))
        return self._table(node, store, self.key_serde, values, origin)

    # -- grouping ----------------------------------------------------------------------------------
    def group_by(self, selector: Callable[[Any, Any], tuple[Any, Any] | None], key_serde: Serde[Any] | None = None,
                 value_serde: Serde[Any] | None = None, name: str | None = None) -> KGroupedTable:
        """Re-key the table: selector(key, value) -> (new key, new value), through the repartition
        topic `<application.id>-<name or store>-repartition`. Each update sends a subtract of the
        old pair and an add of the new one (one change when the key stays), so the aggregation
        behind it takes the old value out before it puts the new one in."""
        node = self._b._processor(self.node, "KTABLE-SELECT", TableSelect(selector), name=name)
        self._origin.enable_old_values(True)
        return KGroupedTable(self._b, node, key_serde or self.key_serde, value_serde or self.value_serde, name)

    # -- joins -------------------------------------------------------------------------------------
    def join(self, other: KTable, joiner_or_extractor: Callable[..., Any],
             joiner: Callable[[Any, Any], Any] | None = None, value_serde: Serde[Any] | None = None,
             store: str | None = None, in_memory: bool = False, name: str | None = None) -> KTable:
        """`join(other, joiner)`: the inner join on the key, joiner(value, other value), timestamped
        with the later of both. `join(other, foreign_key_extractor, joiner)`: the foreign-key join
        (KIP-213), each entry joined with `other`'s entry at foreign_key_extractor(value)."""
        if joiner is not None:
            return self._foreign_key_join(other, joiner_or_extractor, joiner, False, value_serde, store, in_memory,
                                          name)
        return self._join(other, joiner_or_extractor, JoinKind.INNER, value_serde, store, in_memory, name)

    def left_join(self, other: KTable, joiner_or_extractor: Callable[..., Any],
                  joiner: Callable[[Any, Any], Any] | None = None, value_serde: Serde[Any] | None = None,
                  store: str | None = None, in_memory: bool = False, name: str | None = None) -> KTable:
        """As `join`, keeping every entry of this table (joined with None where `other` has none)."""
        if joiner is not None:
            return self._foreign_key_join(other, joiner_or_extractor, joiner, True, value_serde, store, in_memory,
                                          name)
        return self._join(other, joiner_or_extractor, JoinKind.LEFT, value_serde, store, in_memory, name)

    def outer_join(self, other: KTable, joiner: Callable[[Any, Any], Any], value_serde: Serde[Any] | None = None,
                   store: str | None = None, in_memory: bool = False, name: str | None = None) -> KTable:
        """The outer join on the key: every key either table has (None for the missing side)."""
        return self._join(other, joiner, JoinKind.OUTER, value_serde, store, in_memory, name)

    def _join(self, other: KTable, joiner: Callable[[Any, Any], Any], kind: JoinKind, value_serde: Serde[Any] | None,
              store: str | None, in_memory: bool, name: str | None) -> KTable:
        b = self._b
        if other._b is not b:
            raise TopologyError(name or "join", "cannot join tables of different builders")
        merge_name = b._name_or(name, "KTABLE-MERGE")
        b._copartitioned.append(frozenset({*_source_names(self.node), *_source_names(other.node)}))
        if kind in (JoinKind.LEFT, JoinKind.OUTER):
            self._origin.enable_old_values(True)
        if kind is JoinKind.OUTER:
            other._origin.enable_old_values(True)
        this_getter, other_getter = read_values(self._self(), merge_name), read_values(other, merge_name)
        other_kind = JoinKind.RIGHT if kind is JoinKind.LEFT else kind  # a left join's other side
        this_name = b._name_or(name and f"{name}-join-this", "KTABLE-JOINTHIS")
        other_name = b._name_or(name and f"{name}-join-other", "KTABLE-JOINOTHER")
        this_node = b._processor(self.node, "", TableJoin(kind, other_getter, joiner), getter_stores(other_getter),
                                 this_name)
        other_node = b._processor(other.node, "", TableJoin(other_kind, this_getter, _reverse(joiner)),
                                  getter_stores(this_getter), other_name)
        values = value_serde or self.value_serde
        merge = b._processor([this_node, other_node], "", TableJoinMerge(store),
                             self._materialize(store, values, in_memory), merge_name)
        origin = JoinOrigin(merge, (this_node, other_node), (self._self(), other), kind, joiner, store)
        return self._table(merge, store, self.key_serde, values, origin)

    def _foreign_key_join(self, other: KTable, extractor: Callable[[Any], Any], joiner: Callable[[Any, Any], Any],
                          left: bool, value_serde: Serde[Any] | None, store: str | None, in_memory: bool,
                          name: str | None) -> KTable:
        from streams_rt.topology.fk_join import foreign_key_join  # it builds tables: imports dsl

        return foreign_key_join(self._self(), other, extractor, joiner, left, value_serde, store, in_memory, name)

    # -- plumbing ----------------------------------------------------------------------------------
    def _self(self) -> KTable:
        from streams_rt.topology.dsl import KTable

        assert isinstance(self, KTable)
        return self

    def _materialize(self, store: str | None, values: Serde[Any], in_memory: bool) -> tuple[str, ...]:
        """A named store for an operator's result (its definition added); the node's stores."""
        if store is None:
            return ()
        self._b.add_state_store(StoreDefinition(store, self.key_serde, values, in_memory=in_memory, timestamped=True))
        return (store,)

    def _table(self, node: ProcessorNode, store: str | None, keys: Serde[Any], values: Serde[Any],
               origin: TableOrigin) -> KTable:
        from streams_rt.topology.dsl import KTable

        return KTable(self._b, node, store, keys, values, origin)


def _source_names(node: Node) -> list[str]:
    """The sources upstream of `node` (the co-partitioning a join needs)."""
    from streams_rt.topology.dsl import _source_names as sources

    return sources(node)


@dataclass(eq=False)
class KGroupedTable:
    """A re-keyed table, aggregated with an adder and a subtractor (Kafka's KGroupedTable)."""

    _b: StreamsBuilder
    _select: ProcessorNode
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    _name: str | None
    _repartitioned: Node | None = field(default=None, repr=False)

    def count(self, store: str | None = None, in_memory: bool = False) -> KTable:
        """Entries per key: +1 for each entry the key gains, -1 for each it loses."""
        return self._aggregate(lambda: 0, lambda k, v, agg: agg + 1, lambda k, v, agg: agg - 1, store,
                               Serdes.int64(), in_memory)

    def sum(self, store: str | None = None, in_memory: bool = False) -> KTable:
        """The sum of the values per key (numbers), run record by record: a value added, and taken
        out again when its entry changes or goes."""
        return self._aggregate(lambda: 0, lambda k, v, agg: agg + v, lambda k, v, agg: agg - v, store,
                               self.value_serde, in_memory)

    def mean(self, store: str | None = None, in_memory: bool = False) -> KTable:
        """{"count": n, "sum": s, "mean": s / n} per key (a JSON value; mean None when n is 0)."""
        return self._aggregate(lambda: _mean(0, 0.0), lambda k, v, a: _mean(a["count"] + 1, a["sum"] + v),
                               lambda k, v, a: _mean(a["count"] - 1, a["sum"] - v), store, Serdes.json(), in_memory)

    def min(self, store: str | None = None, in_memory: bool = False) -> KTable:
        raise TopologyError("min", _NOT_INVERTIBLE)

    def max(self, store: str | None = None, in_memory: bool = False) -> KTable:
        raise TopologyError("max", _NOT_INVERTIBLE)

    def reduce(self, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any], store: str | None = None,
               in_memory: bool = False) -> KTable:
        """adder(aggregate, value) for each value a key gains (its first value is its first
        aggregate), subtractor(aggregate, value) for each it loses; a None aggregate deletes."""
        return self._aggregate(None, adder, subtractor, store, self.value_serde, in_memory, reduce=True)

    def aggregate(self, initializer: Callable[[], Any], adder: Callable[[Any, Any, Any], Any],
                  subtractor: Callable[[Any, Any, Any], Any], store: str | None = None,
                  value_serde: Serde[Any] | None = None, in_memory: bool = False) -> KTable:
        """adder(key, value, aggregate) for each value a key gains, starting from initializer();
        subtractor(key, value, aggregate) for each it loses (before the add, when a value changes)."""
        return self._aggregate(initializer, adder, subtractor, store, value_serde or self.value_serde, in_memory)

    def _aggregate(self, initializer: Callable[[], Any] | None, adder: Callable[..., Any],
                   subtractor: Callable[..., Any], store: str | None, values: Serde[Any], in_memory: bool,
                   reduce: bool = False) -> KTable:
        b = self._b
        store_name = store or b._name("KTABLE-AGGREGATE-STATE-STORE")
        b.add_state_store(StoreDefinition(store_name, self.key_serde, values, in_memory=in_memory, timestamped=True))
        if self._repartitioned is None or self._name is None:
            topic = f"{self._name or store_name}-repartition"
            self._repartitioned = b._repartition(self._select, topic, self.key_serde, ChangedSerde(self.value_serde),
                                                 stream=False)
        op = TableAggregate(store_name, initializer, adder, subtractor)
        node = b._processor(self._repartitioned, "KTABLE-REDUCE" if reduce else "KTABLE-AGGREGATE", op,
                            (store_name,))
        return _new_table(b, node, store_name, self.key_serde, values)


_NOT_INVERTIBLE = ("a grouped table's aggregation takes a value out when its entry changes, and a minimum or "
                   "maximum cannot be undone without every value: use aggregate() with a state that keeps them")


def _mean(count: int, total: float) -> dict[str, Any]:
    return {"count": count, "sum": float(total), "mean": float(total) / count if count else None}


def _new_table(builder: StreamsBuilder, node: ProcessorNode, store: str, keys: Serde[Any],
               values: Serde[Any]) -> KTable:
    from streams_rt.topology.dsl import KTable

    return KTable(builder, node, store, keys, values)
