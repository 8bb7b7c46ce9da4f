"""The graph a topology is made of: sources, processors (each carrying one operation) and sinks, as
plain data. The DSL builds it; the task runtime executes it; nothing here runs user code."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc

from streams_rt.topology.aggregators import Builtin
from streams_rt.topology.columns import Field, MapBatches, Split, Value, Words
from streams_rt.topology.joins import JoinWindowPut, StreamStreamJoin
from streams_rt.topology.processor import ProcessorSupplier
from streams_rt.topology.serdes import Serde
from streams_rt.topology.suppress import Suppress
from streams_rt.topology.windowed import SessionAggregate, SlidingAggregate
from streams_rt.topology.windows import TimeWindows


@dataclass(eq=False)
class Node:
    name: str
    parents: list[Node] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)

    def add_child(self, child: Node) -> None:
        self.children.append(child)
        child.parents.append(self)


@dataclass(eq=False)
class SourceNode(Node):
    """Reads topics; `internal` topics are repartition topics named `<application.id>-<topic>`."""

    topics: tuple[str, ...] = ()
    key_serde: Serde[Any] | None = None
    value_serde: Serde[Any] | None = None
    internal: bool = False


@dataclass(eq=False)
class SinkNode(Node):
    """Writes a topic; an `internal` one is a repartition topic the downstream subtopology reads."""

    topic: str = ""
    key_serde: Serde[Any] | None = None
    value_serde: Serde[Any] | None = None
    internal: bool = False


# ---- operations ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Filter:
    """predicate(key, value), or a pyarrow.compute expression over key, value and timestamp."""

    predicate: Callable[[Any, Any], bool] | pc.Expression


@dataclass(frozen=True)
class Map:
    mapper: Callable[[Any, Any], tuple[Any, Any]]


@dataclass(frozen=True)
class MapValues:
    mapper: Callable[[Any], Any] | Field


@dataclass(frozen=True)
class FlatMap:
    mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]]


@dataclass(frozen=True)
class FlatMapValues:
    mapper: Callable[[Any], Iterable[Any]] | Words | Split


@dataclass(frozen=True)
class SelectKey:
    mapper: Callable[[Any, Any], Any] | Field | Value


@dataclass(frozen=True)
class Peek:
    action: Callable[[Any, Any], None]


@dataclass(frozen=True)
class Branch:
    """Child i gets the records whose first true predicate is i; a last child without predicate
    (`has_default`) gets the rest; others are dropped."""

    predicates: tuple[Callable[[Any, Any], bool], ...]
    has_default: bool


@dataclass(frozen=True)
class Passthrough:
    """Forwards every record unchanged (merge, to_stream, naming points)."""


@dataclass(frozen=True)
class Aggregate:
    """count / reduce / aggregate into `store`, per key or per (key, window). `initializer()` is
    the first aggregate; `aggregator(key, value, aggregate)` the next one. `builtin`: a built-in
    aggregator the runtime may run per batch (then the two functions are its record-by-record form);
    `partials_in`: the records are partial states from a combiner, merged rather than aggregated.
    A combiner is an Aggregate with no store (`store` None): it forwards partial states."""

    store: str | None
    initializer: Callable[[], Any]
    aggregator: Callable[[Any, Any, Any], Any]
    windows: TimeWindows | None = None
    builtin: Builtin | None = None
    partials_in: bool = False
    emit_final: bool = False  # windowed: each window's result once, when it closes (KIP-825)


@dataclass(frozen=True)
class TableSource:
    """Materializes a topic as a table in `store`: the latest value per key (None deletes)."""

    store: str


@dataclass(frozen=True)
class Join:
    """Stream-table join: each stream record is joined with the table's current value for its key;
    inner drops records without one, left joins them with None."""

    store: str
    joiner: Callable[[Any, Any], Any]
    left: bool


@dataclass(frozen=True)
class Process:
    """A user processor (processor API) with the stores it may use."""

    supplier: ProcessorSupplier
    stores: tuple[str, ...]


Operation = (
    Filter | Map | MapValues | FlatMap | FlatMapValues | SelectKey | Peek | Branch | Passthrough | Aggregate
    | TableSource | Join | Process | MapBatches | JoinWindowPut | StreamStreamJoin | SessionAggregate
    | SlidingAggregate | Suppress
)


@dataclass(eq=False)
class ProcessorNode(Node):
    operation: Operation | None = None
    stores: tuple[str, ...] = ()

