"""The table operators' operations, as plain data (the DSL builds them, the runtime runs them): each
takes `Change`s and forwards `Change`s, as Kafka Streams' KTable processors do; and value getters,
which say how an operator reads a table's current value for a key (Kafka's KTableValueGetter): from
its store, or through the filters, mappers and joins between it and a store.

Whether a table operator forwards old values is decided once the whole topology is built (a
downstream operator may ask for them), so it lives on the node (`ProcessorNode.send_old_values`),
not here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams_rt.topology.joins import JoinKind
from streams_rt.topology.serdes import Serde


# -- value getters -------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoreGetter:
    """A materialized table: its store (a window store's getter takes `Windowed` keys)."""

    store: str


@dataclass(frozen=True)
class FilterGetter:
    parent: Getter
    predicate: Callable[[Any, Any], bool]
    filter_not: bool


@dataclass(frozen=True)
class MapValuesGetter:
    parent: Getter
    mapper: Callable[[Any], Any]


@dataclass(frozen=True)
class JoinGetter:
    """A table-table join's result computed from both sides' getters (`kind` of the left side)."""

    kind: JoinKind
    left: Getter
    right: Getter
    joiner: Callable[[Any, Any], Any]


Getter = StoreGetter | FilterGetter | MapValuesGetter | JoinGetter


def getter_stores(getter: Getter) -> tuple[str, ...]:
    """The stores a getter reads: the nodes using it are connected to them (same subtopology)."""
    if isinstance(getter, StoreGetter):
        return (getter.store,)
    if isinstance(getter, JoinGetter):
        return tuple(dict.fromkeys(getter_stores(getter.left) + getter_stores(getter.right)))
    return getter_stores(getter.parent)


# -- operations -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToStream:
    """A table's updates as a stream: (key, new value), deletes as tombstones."""


@dataclass(frozen=True)
class TableFilter:
    """Kafka's KTableFilter: values the predicate rejects become deletes; `store` materializes."""

    predicate: Callable[[Any, Any], bool]
    filter_not: bool
    store: str | None


@dataclass(frozen=True)
class TableMapValues:
    """Kafka's KTableMapValues: mapper(value) for every non-null value; `store` materializes."""

    mapper: Callable[[Any], Any]
    store: str | None


@dataclass(frozen=True)
class TableSelect:
    """Kafka's KTableRepartitionMap: selector(key, value) -> (new key, new value) of the new and the
    old value, sent through the grouping's repartition topic (a subtract and an add, or one change
    when the key stays)."""

    selector: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class TableAggregate:
    """Kafka's KTableAggregate (and KTableReduce, `initializer` None): the old value subtracted, the
    new one added, into `store`."""

    store: str
    initializer: Callable[[], Any] | None
    adder: Callable[..., Any]
    subtractor: Callable[..., Any]


@dataclass(frozen=True)
class TableJoin:
    """One side of a table-table join (Kafka's KTableKTable{Inner,Left,Right,Outer}Join): each change
    of this side joined with the other side's current value (`other`); `joiner(this, other)`."""

    kind: JoinKind
    other: Getter
    joiner: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class TableJoinMerge:
    """Kafka's KTableKTableJoinMerger: both sides' results, into `store` when materialized."""

    store: str | None


@dataclass(frozen=True)
class TablePassThrough:
    """Kafka's KTablePassThrough: a cogroup's aggregations, merged into one table."""


# -- the foreign-key join (KIP-213), as Kafka builds it -------------------------------------------
@dataclass(frozen=True)
class SubscriptionSend:
    """Left side (Kafka's SubscriptionSendProcessorSupplier): each change subscribes its entry to
    the new foreign key (and unsubscribes it from the old one), keyed by foreign key."""

    extractor: Callable[[Any], Any]
    left: bool
    foreign_keys: Serde[Any]  # compares foreign keys by their bytes, as Kafka does
    values: Serde[Any]  # the left values' serde: each value's hash is of its bytes


@dataclass(frozen=True)
class SubscriptionReceive:
    """Right side: records each subscription in `store` (keyed by foreign key and primary key)."""

    store: str


@dataclass(frozen=True)
class SubscriptionJoin:
    """Right side: answers a new subscription with the foreign table's current value."""

    foreign: Getter


@dataclass(frozen=True)
class ForeignTableJoin:
    """Right side: a foreign table change answers every subscriber of its key (a prefix scan)."""

    store: str


@dataclass(frozen=True)
class ResponseJoin:
    """Left side (Kafka's ResponseJoinProcessorSupplier): joins a response with the entry's current
    value if that is still the value it answers (same hash), else drops it as stale."""

    primary: Getter
    values: Serde[Any]
    joiner: Callable[[Any, Any], Any]
    left: bool


TableOperation = (
    ToStream | TableFilter | TableMapValues | TableSelect | TableAggregate | TableJoin | TableJoinMerge
    | TablePassThrough | SubscriptionSend | SubscriptionReceive | SubscriptionJoin | ForeignTableJoin | ResponseJoin
)
