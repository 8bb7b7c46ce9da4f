"""The DSL: Kafka Streams' StreamsBuilder, KStream, KGroupedStream, KTable and windowed streams,
with Pythonic names. Each call adds nodes to the builder's graph; `build()` returns the Topology.

Functions take the record's key and value the way Kafka's do (a KeyValueMapper gets both; a
ValueMapper only the value). Node names follow Kafka's: `KSTREAM-FILTER-0000000001`, ..."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, overload

import pyarrow as pa
import pyarrow.compute as pc

from streams_rt.topology.aggregators import Builtin
from streams_rt.topology.columns import Field, MapBatches, Split, Value, Words
from streams_rt.topology.errors import TopologyError
from streams_rt.topology.joins import JoinKind, JoinWindowPut, JoinWindows, join_sides, plan_join
from streams_rt.topology.nodes import (
    Aggregate,
    Branch,
    Filter,
    FlatMap,
    FlatMapValues,
    Join,
    Map,
    MapValues,
    Node,
    Operation,
    Passthrough,
    Peek,
    Process,
    ProcessorNode,
    SelectKey,
    SinkNode,
    SourceNode,
    TableSource,
)
from streams_rt.topology.processor import ProcessorSupplier
from streams_rt.topology.serdes import Serde, Serdes
from streams_rt.topology.stores import StoreDefinition, check_name
from streams_rt.topology.suppress import Suppress, SuppressBufferSerde, Suppressed
from streams_rt.topology.topology import Topology
from streams_rt.topology.windowed import SessionWindowedStream, SlidingWindowedStream
from streams_rt.topology.windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows, WindowedSerde


class StreamsBuilder:
    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._stores: dict[str, StoreDefinition] = {}
        self._copartitioned: list[frozenset[str]] = []
        self._counter = 0

    # -- sources -----------------------------------------------------------------------------
    def stream(self, topic: str | Iterable[str], key_serde: Serde[Any] | None = None,
               value_serde: Serde[Any] | None = None) -> KStream:
        """A stream of the records of one or more topics (bytes unless serdes are given)."""
        topics = (topic,) if isinstance(topic, str) else tuple(topic)
        if not topics:
            raise TopologyError("stream", "needs at least one topic")
        for t in topics:
            check_name(t, "topic")
        keys, values = key_serde or Serdes.bytes(), value_serde or Serdes.bytes()
        source = self._add(SourceNode(self._name("KSTREAM-SOURCE"), topics=topics, key_serde=keys, value_serde=values))
        return KStream(self, source, keys, values)

    def table(self, topic: str, key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None,
              store: str | None = None, in_memory: bool = False) -> KTable:
        """The topic as a table: the latest value per key, materialized in a queryable store."""
        check_name(topic, "topic")
        keys, values = key_serde or Serdes.bytes(), value_serde or Serdes.bytes()
        source = self._add(SourceNode(self._name("KTABLE-SOURCE"), topics=(topic,), key_serde=keys, value_serde=values))
        store_name = store or f"{topic}-STATE-STORE-{self._counter:010d}"
        self.add_state_store(StoreDefinition(store_name, keys, values, in_memory=in_memory, timestamped=True))
        node = self._processor(source, "KTABLE-SOURCE-PROCESSOR", TableSource(store_name), (store_name,))
        return KTable(self, node, store_name, keys, values)

    def add_state_store(self, store: StoreDefinition) -> None:
        if store.name in self._stores and self._stores[store.name] != store:
            raise TopologyError(store.name, "a different store with this name exists")
        self._stores[store.name] = store

    def build(self) -> Topology:
        return Topology(self._nodes, self._stores, self._copartitioned)

    # -- plumbing for the stream classes ----------------------------------------------------
    def _name(self, prefix: str) -> str:
        name = f"{prefix}-{self._counter:010d}"
        self._counter += 1
        return name

    def _add(self, node: Node) -> Node:
        self._nodes.append(node)
        return node

    def _processor(self, parent: Node | list[Node], prefix: str, operation: Operation,
                   stores: tuple[str, ...] = (), name: str | None = None) -> ProcessorNode:
        node = ProcessorNode(name or self._name(prefix), operation=operation, stores=stores)
        for p in parent if isinstance(parent, list) else [parent]:
            p.add_child(node)
        self._add(node)
        return node

    def _repartition(self, parent: Node, topic_name: str, keys: Serde[Any], values: Serde[Any]) -> SourceNode:
        """Sink into the internal topic `<application.id>-<topic_name>`, and a source reading it:
        the boundary between two subtopologies."""
        check_name(topic_name, "repartition topic")
        sink = SinkNode(self._name("KSTREAM-SINK"), topic=topic_name, key_serde=keys, value_serde=values, internal=True)
        parent.add_child(sink)
        self._add(sink)
        source = SourceNode(self._name("KSTREAM-SOURCE"), topics=(topic_name,), key_serde=keys, value_serde=values,
                            internal=True)
        self._add(source)
        return source


class KStream:
    """A record stream. `key_changed`: an operation may have changed the key since the source, so
    grouping or joining by key needs a repartition first."""

    def __init__(self, builder: StreamsBuilder, node: Node, key_serde: Serde[Any], value_serde: Serde[Any],
                 key_changed: bool = False) -> None:
        self._b, self.node = builder, node
        self.key_serde, self.value_serde, self.key_changed = key_serde, value_serde, key_changed

    def _next(self, prefix: str, operation: Operation, key_changed: bool | None = None,
              key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None,
              stores: tuple[str, ...] = (), name: str | None = None) -> KStream:
        node = self._b._processor(self.node, prefix, operation, stores, name)
        return KStream(self._b, node, key_serde or self.key_serde, value_serde or self.value_serde,
                       self.key_changed if key_changed is None else key_changed)

    # -- stateless ---------------------------------------------------------------------------
    def filter(self, predicate: Callable[[Any, Any], bool] | pc.Expression, name: str | None = None) -> KStream:
        """predicate(key, value), or a pyarrow.compute expression over the fields key, value and
        timestamp, run on whole batches (a null result drops the record, as in SQL)."""
        return self._next("KSTREAM-FILTER", Filter(predicate), name=name)

    def filter_not(self, predicate: Callable[[Any, Any], bool] | pc.Expression, name: str | None = None) -> KStream:
        """The records `filter` drops (for an expression: where it is false; null drops both ways)."""
        if isinstance(predicate, pc.Expression):
            return self._next("KSTREAM-FILTER", Filter(~predicate), name=name)
        return self._next("KSTREAM-FILTER", Filter(lambda k, v: not predicate(k, v)), name=name)

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]], key_serde: Serde[Any] | None = None,
            value_serde: Serde[Any] | None = None, name: str | None = None) -> KStream:
        """mapper(key, value) -> (new key, new value)."""
        return self._next("KSTREAM-MAP", Map(mapper), True, key_serde, value_serde, name=name)

    def map_values(self, mapper: Callable[[Any], Any] | Field, value_serde: Serde[Any] | None = None,
                   name: str | None = None) -> KStream:
        """mapper(value), or Field(path): a field of a JSON value, on whole batches."""
        return self._next("KSTREAM-MAPVALUES", MapValues(mapper), value_serde=value_serde, name=name)

    def select_key(self, mapper: Callable[[Any, Any], Any] | Field | Value, key_serde: Serde[Any] | None = None,
                   name: str | None = None) -> KStream:
        """mapper(key, value), or on whole batches Field(path) (the key becomes a field of a JSON
        value) or Value() (the value becomes the key)."""
        return self._next("KSTREAM-KEY-SELECT", SelectKey(mapper), True, key_serde, name=name)

    def map_batches(self, fn: Callable[[pa.RecordBatch], pa.RecordBatch], key_serde: Serde[Any] | None = None,
                    value_serde: Serde[Any] | None = None, name: str | None = None) -> KStream:
        """fn(batch) -> batch over whole batches of records (Spark's mapInArrow shape): columns key,
        value, timestamp in; key, value (and timestamp, else unchanged: then as many rows) out."""
        return self._next("KSTREAM-MAPBATCHES", MapBatches(fn), True, key_serde, value_serde, name=name)

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]], key_serde: Serde[Any] | None = None,
                 value_serde: Serde[Any] | None = None, name: str | None = None) -> KStream:
        """mapper(key, value) -> any number of (key, value) pairs."""
        return self._next("KSTREAM-FLATMAP", FlatMap(mapper), True, key_serde, value_serde, name=name)

    def flat_map_values(self, mapper: Callable[[Any], Iterable[Any]] | Words | Split,
                        value_serde: Serde[Any] | None = None, name: str | None = None) -> KStream:
        """mapper(value) -> any number of values, or Words() / Split(separator) on whole batches."""
        return self._next("KSTREAM-FLATMAPVALUES", FlatMapValues(mapper), value_serde=value_serde, name=name)

    def peek(self, action: Callable[[Any, Any], None], name: str | None = None) -> KStream:
        return self._next("KSTREAM-PEEK", Peek(action), name=name)

    def split(self, prefix: str = "") -> BranchedStream:
        """Kafka's split(): route each record to the first branch whose predicate holds."""
        return BranchedStream(self, prefix)

    def merge(self, other: KStream, name: str | None = None) -> KStream:
        if other._b is not self._b:
            raise TopologyError(name or "merge", "cannot merge streams of different builders")
        node = self._b._processor([self.node, other.node], "KSTREAM-MERGE", Passthrough(), name=name)
        return KStream(self._b, node, self.key_serde, self.value_serde, self.key_changed or other.key_changed)

    def to(self, topic: str, key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None,
           name: str | None = None) -> None:
        """Write to `topic`; these records are also the topology's output rows."""
        check_name(topic, "topic")
        sink = SinkNode(name or self._b._name("KSTREAM-SINK"), topic=topic, key_serde=key_serde or self.key_serde,
                        value_serde=value_serde or self.value_serde)
        self.node.add_child(sink)
        self._b._add(sink)

    def repartition(self, name: str, key_serde: Serde[Any] | None = None,
                    value_serde: Serde[Any] | None = None) -> KStream:
        """Through the internal topic `<application.id>-<name>-repartition`: records are then
        partitioned by their current key."""
        keys, values = key_serde or self.key_serde, value_serde or self.value_serde
        source = self._b._repartition(self.node, f"{name}-repartition", keys, values)
        return KStream(self._b, source, keys, values, key_changed=False)

    # -- stateful ----------------------------------------------------------------------------
    def group_by_key(self, key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None,
                     name: str | None = None, combine: bool = True) -> KGroupedStream:
        """Group by the current key; repartitioned first only if an operation may have changed it.
        `combine`: see `group_by`."""
        return KGroupedStream(self, key_serde or self.key_serde, value_serde or self.value_serde,
                              self.key_changed, name, combine)

    def group_by(self, selector: Callable[[Any, Any], Any] | Field | Value, key_serde: Serde[Any] | None = None,
                 value_serde: Serde[Any] | None = None, name: str | None = None,
                 combine: bool = True) -> KGroupedStream:
        """Group by selector(key, value) (or Field(path), or Value()): always through a repartition
        topic `<application.id>-<name>-repartition` (name defaults to the aggregation's store).
        `combine`: a built-in aggregation (count, sum, min, max, mean; not windowed) then sends
        per-batch partial aggregates through that topic instead of every record (docs/processing.md)."""
        keyed = self.select_key(selector, key_serde)
        return KGroupedStream(keyed, key_serde or self.key_serde, value_serde or self.value_serde, True, name,
                              combine)

    def join(self, other: KTable | KStream, joiner: Callable[[Any, Any], Any],
             value_serde: Serde[Any] | JoinWindows | None = None, name: str | None = None, *,
             windows: JoinWindows | None = None, store_name: str | None = None) -> KStream:
        """Inner join. With a table: joiner(stream value, table value) for records whose key the
        table has. With a stream: joiner(this value, other value) for every pair of records of one
        key within `windows` (JoinWindows, which may also come third, as in Kafka); `name` and
        `store_name` are StreamJoined's (see streams_rt.topology.joins)."""
        if isinstance(other, KStream):
            return self._stream_join(other, joiner, JoinKind.INNER, value_serde, windows, name, store_name)
        return self._join(other, joiner, False, value_serde, name)

    def left_join(self, other: KTable | KStream, joiner: Callable[[Any, Any], Any],
                  value_serde: Serde[Any] | JoinWindows | None = None, name: str | None = None, *,
                  windows: JoinWindows | None = None, store_name: str | None = None) -> KStream:
        """Left join. With a table: records without a table value are joined with None. With a
        stream: as `join`, and a record that found no partner is joined with None once its window
        has closed."""
        if isinstance(other, KStream):
            return self._stream_join(other, joiner, JoinKind.LEFT, value_serde, windows, name, store_name)
        return self._join(other, joiner, True, value_serde, name)

    def outer_join(self, other: KStream, joiner: Callable[[Any, Any], Any],
                   value_serde: Serde[Any] | JoinWindows | None = None, name: str | None = None, *,
                   windows: JoinWindows | None = None, store_name: str | None = None) -> KStream:
        """Outer stream-stream join: as `left_join`, for records of either side (joiner(None,
        other value) for the other side's)."""
        return self._stream_join(other, joiner, JoinKind.OUTER, value_serde, windows, name, store_name)

    def _stream_join(self, other: KStream, joiner: Callable[[Any, Any], Any], kind: JoinKind,
                     value_serde: Serde[Any] | JoinWindows | None, windows: JoinWindows | None, name: str | None,
                     store_name: str | None) -> KStream:
        if isinstance(value_serde, JoinWindows):
            windows, value_serde = value_serde, None
        what = name or f"{kind.value} join"
        if windows is None:
            raise TopologyError(what, "a stream-stream join needs JoinWindows (windows=...)")
        if other._b is not self._b:
            raise TopologyError(what, "cannot join streams of different builders")
        if self.key_changed or other.key_changed:
            raise TopologyError(what, "a stream's key may have changed since its source: call repartition(name) "
                                      "on it before the join")
        b = self._b
        plan = plan_join(b._name, kind, windows, self.key_serde, self.value_serde, other.value_serde, name, store_name)
        for store in plan.stores:
            b.add_state_store(store)
        left_op, right_op = join_sides(plan, kind, joiner, windows, self.key_serde, self.value_serde,
                                       other.value_serde)
        this_windowed = b._processor(self.node, "", JoinWindowPut(plan.this_store), (plan.this_store,),
                                     name=plan.this_windowed)
        other_windowed = b._processor(other.node, "", JoinWindowPut(plan.other_store), (plan.other_store,),
                                      name=plan.other_windowed)
        outer = (plan.outer_store,) if plan.outer_store else ()
        this_join = b._processor(this_windowed, "", left_op, (plan.other_store, *outer), name=plan.this_join)
        other_join = b._processor(other_windowed, "", right_op, (plan.this_store, *outer), name=plan.other_join)
        merge = b._processor([this_join, other_join], "", Passthrough(), name=plan.merge)
        b._copartitioned.append(frozenset({*_source_names(self.node), *_source_names(other.node)}))
        return KStream(b, merge, self.key_serde, value_serde or self.value_serde)

    def _join(self, table: KTable, joiner: Callable[[Any, Any], Any], left: bool,
              value_serde: Serde[Any] | JoinWindows | None, name: str | None) -> KStream:
        if isinstance(value_serde, JoinWindows):
            raise TopologyError(name or "join", "a stream-table join takes no JoinWindows")
        if self.key_changed:
            raise TopologyError(name or "join", "the stream's key may have changed since its source: call "
                                                "repartition(name) before joining it with a table")
        joined = self._next("KSTREAM-JOIN", Join(table.store, joiner, left), value_serde=value_serde,
                            stores=(table.store,), name=name)
        self._b._copartitioned.append(frozenset({*_source_names(self.node), *_source_names(table.node)}))
        return joined

    def process(self, supplier: ProcessorSupplier, stores: Iterable[StoreDefinition | str] = (),
                key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None,
                name: str | None = None) -> KStream:
        """A processor API step: `supplier()` makes one processor per task; it may use `stores`
        (definitions are added to the topology) and forwards any records it likes."""
        names = []
        for store in stores:
            if isinstance(store, StoreDefinition):
                self._b.add_state_store(store)
                names.append(store.name)
            else:
                names.append(store)
        return self._next("KSTREAM-PROCESSOR", Process(supplier, tuple(names)), True, key_serde, value_serde,
                          stores=tuple(names), name=name)


def _source_names(node: Node) -> list[str]:
    """The sources upstream of `node` within its subtopology (joins check they are co-partitioned)."""
    found, todo, seen = [], [node], set()
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SourceNode):
            found.append(current.name)
        todo.extend(current.parents)
    return found


class BranchedStream:
    """stream.split().branch(predicate, name).branch(...).default_branch(name) -> {name: KStream}."""

    def __init__(self, stream: KStream, prefix: str) -> None:
        self._stream, self._prefix = stream, prefix
        self._branches: list[tuple[str, Callable[[Any, Any], bool]]] = []

    def branch(self, predicate: Callable[[Any, Any], bool], name: str | None = None) -> BranchedStream:
        self._branches.append((self._prefix + (name or str(len(self._branches) + 1)), predicate))
        return self

    def default_branch(self, name: str = "0") -> dict[str, KStream]:
        return self._finish(self._prefix + name)

    def no_default_branch(self) -> dict[str, KStream]:
        return self._finish(None)

    def _finish(self, default: str | None) -> dict[str, KStream]:
        b = self._stream._b
        names = [n for n, _ in self._branches] + ([default] if default is not None else [])
        if len(set(names)) != len(names):
            raise TopologyError("split", f"branch names must be unique, got {names}")
        operation = Branch(tuple(p for _, p in self._branches), default is not None)
        splitter = b._processor(self._stream.node, "KSTREAM-BRANCH", operation)
        out = {}
        for branch_name in names:
            child = b._processor(splitter, "KSTREAM-BRANCHCHILD", Passthrough())
            out[branch_name] = KStream(b, child, self._stream.key_serde, self._stream.value_serde,
                                       self._stream.key_changed)
        return out


class KGroupedStream:
    def __init__(self, stream: KStream, key_serde: Serde[Any], value_serde: Serde[Any], repartition: bool,
                 name: str | None, combine: bool = True) -> None:
        self._stream, self.key_serde, self.value_serde = stream, key_serde, value_serde
        self._repartition_needed, self._name, self._combine = repartition, name, combine

    def _input(self, store: str, builtin: Builtin | None = None) -> tuple[Node, bool]:
        """The node the aggregation hangs under (the stream itself, or a repartition of it), and
        whether what arrives there is a combiner's partial states."""
        if not self._repartition_needed:
            return self._stream.node, False
        b = self._stream._b
        base = self._name or store
        topic = f"{base}-repartition"
        if builtin is None or not self._combine:
            return b._repartition(self._stream.node, topic, self.key_serde, self.value_serde), False
        # Named apart from Kafka's numbering, so every other node keeps the name Kafka would give it.
        combiner = b._processor(self._stream.node, "", _combiner(builtin), name=f"{base}-combine")
        partials = builtin.result_serde(self.value_serde)
        return b._repartition(combiner, topic, self.key_serde, partials), True

    def _store(self, store: str | None) -> str:
        return store or self._stream._b._name("KSTREAM-AGGREGATE-STATE-STORE")

    def count(self, store: str | None = None, in_memory: bool = False) -> KTable:
        """Records per key (null keys and values dropped), run on whole batches."""
        return self._builtin(Builtin.COUNT, store, in_memory)

    def sum(self, store: str | None = None, in_memory: bool = False) -> KTable:
        """The sum of the values per key (numbers; null values left out), run on whole batches."""
        return self._builtin(Builtin.SUM, store, in_memory)

    def min(self, store: str | None = None, in_memory: bool = False) -> KTable:
        return self._builtin(Builtin.MIN, store, in_memory)

    def max(self, store: str | None = None, in_memory: bool = False) -> KTable:
        return self._builtin(Builtin.MAX, store, in_memory)

    def mean(self, store: str | None = None, in_memory: bool = False) -> KTable:
        """{"count": n, "sum": s, "mean": s / n} per key (a JSON value), run on whole batches."""
        return self._builtin(Builtin.MEAN, store, in_memory)

    def _builtin(self, builtin: Builtin, store: str | None, in_memory: bool) -> KTable:
        name = self._store(store)
        parent, partials_in = self._input(name, builtin)
        initializer, aggregator = _builtin_functions(builtin, partials_in)
        op = Aggregate(name, initializer, aggregator, builtin=builtin, partials_in=partials_in)
        return self._materialize(name, parent, op, builtin.result_serde(self.value_serde), in_memory)

    def reduce(self, reducer: Callable[[Any, Any], Any], store: str | None = None, in_memory: bool = False) -> KTable:
        """reducer(aggregate, value); the first value of a key is its first aggregate."""
        return self.aggregate(lambda: _FIRST, lambda key, value, agg: value if agg is _FIRST else reducer(agg, value),
                              store, self.value_serde, in_memory)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  store: str | None = None, value_serde: Serde[Any] | None = None, in_memory: bool = False) -> KTable:
        """aggregator(key, value, aggregate) -> the new aggregate, starting from initializer()."""
        name = self._store(store)
        parent, _ = self._input(name)
        return self._materialize(name, parent, Aggregate(name, initializer, aggregator),
                                 value_serde or self.value_serde, in_memory)

    def _materialize(self, name: str, parent: Node, op: Aggregate, values: Serde[Any], in_memory: bool) -> KTable:
        b = self._stream._b
        b.add_state_store(StoreDefinition(name, self.key_serde, values, in_memory=in_memory, timestamped=True))
        node = b._processor(parent, "KSTREAM-AGGREGATE", op, (name,))
        return KTable(b, node, name, self.key_serde, values)

    @overload
    def windowed_by(self, windows: TimeWindows) -> TimeWindowedStream: ...

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedStream: ...

    @overload
    def windowed_by(self, windows: SlidingWindows) -> SlidingWindowedStream: ...

    def windowed_by(self, windows: TimeWindows | SessionWindows | SlidingWindows
                    ) -> TimeWindowedStream | SessionWindowedStream | SlidingWindowedStream:
        """Aggregations per window: time (tumbling, hopping), session or sliding windows."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedStream(self, windows)
        if isinstance(windows, SlidingWindows):
            return SlidingWindowedStream(self, windows)
        return TimeWindowedStream(self, windows)


_FIRST = object()  # reduce's "no aggregate yet"


def _builtin_functions(builtin: Builtin, partials_in: bool) -> tuple[Callable[[], Any], Callable[[Any, Any, Any], Any]]:
    """A built-in aggregator's record-by-record form: (initializer, aggregator)."""
    if partials_in:
        return (lambda: None), (lambda key, partial, state: builtin.merge(state, partial))
    return (lambda: None), (lambda key, value, state: builtin.step(state, value))


def _combiner(builtin: Builtin) -> Aggregate:
    """The node before a repartition topic that sends partial states instead of records."""
    initializer, aggregator = _builtin_functions(builtin, False)
    return Aggregate(None, initializer, aggregator, builtin=builtin)


class TimeWindowedStream:
    """Aggregations per key and window; results are keyed by `Windowed(key, start, end)`."""

    def __init__(self, grouped: KGroupedStream, windows: TimeWindows) -> None:
        self._grouped, self.windows = grouped, windows
        self._emit = EmitStrategy.ON_WINDOW_UPDATE

    def emit_strategy(self, strategy: EmitStrategy) -> TimeWindowedStream:
        """Every update of a window (default) or its final result once it closes (KIP-825)."""
        self._emit = strategy
        return self

    def count(self, store: str | None = None, retention_ms: int | None = None, in_memory: bool = False) -> KTable:
        """Records per key and window (a null value counts, as in Kafka), run on whole batches."""
        return self._builtin(Builtin.COUNT, store, retention_ms, in_memory)

    def sum(self, store: str | None = None, retention_ms: int | None = None, in_memory: bool = False) -> KTable:
        return self._builtin(Builtin.SUM, store, retention_ms, in_memory)

    def min(self, store: str | None = None, retention_ms: int | None = None, in_memory: bool = False) -> KTable:
        return self._builtin(Builtin.MIN, store, retention_ms, in_memory)

    def max(self, store: str | None = None, retention_ms: int | None = None, in_memory: bool = False) -> KTable:
        return self._builtin(Builtin.MAX, store, retention_ms, in_memory)

    def mean(self, store: str | None = None, retention_ms: int | None = None, in_memory: bool = False) -> KTable:
        return self._builtin(Builtin.MEAN, store, retention_ms, in_memory)

    def _builtin(self, builtin: Builtin, store: str | None, retention_ms: int | None, in_memory: bool) -> KTable:
        initializer, aggregator = _builtin_functions(builtin, False)
        return self._aggregate(initializer, aggregator, store, builtin.result_serde(self._grouped.value_serde),
                               retention_ms, in_memory, builtin)

    def reduce(self, reducer: Callable[[Any, Any], Any], store: str | None = None, retention_ms: int | None = None,
               in_memory: bool = False) -> KTable:
        return self.aggregate(lambda: _FIRST, lambda key, value, agg: value if agg is _FIRST else reducer(agg, value),
                              store, self._grouped.value_serde, retention_ms, in_memory)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  store: str | None = None, value_serde: Serde[Any] | None = None, retention_ms: int | None = None,
                  in_memory: bool = False) -> KTable:
        return self._aggregate(initializer, aggregator, store, value_serde, retention_ms, in_memory, None)

    def _aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                   store: str | None, value_serde: Serde[Any] | None, retention_ms: int | None, in_memory: bool,
                   builtin: Builtin | None) -> KTable:
        g, w = self._grouped, self.windows
        b = g._stream._b
        name = g._store(store)
        values = value_serde or g.value_serde
        retention = retention_ms if retention_ms is not None else w.default_retention_ms
        if retention < w.size_ms + w.grace_ms:
            raise TopologyError(name, f"retention ({retention} ms) must be at least window size plus grace "
                                      f"({w.size_ms + w.grace_ms} ms)")
        b.add_state_store(StoreDefinition(name, g.key_serde, values, window_size_ms=w.size_ms,
                                          retention_ms=retention, in_memory=in_memory, timestamped=True))
        parent, _ = g._input(name)
        op = Aggregate(name, initializer, aggregator, w, builtin=builtin,
                       emit_final=self._emit is EmitStrategy.ON_WINDOW_CLOSE)
        node = b._processor(parent, "KSTREAM-AGGREGATE", op, (name,))
        table = KTable(b, node, name, WindowedSerde(g.key_serde, w.size_ms), values)
        table.window_close_ms = w.grace_ms
        return table


class KTable:
    """A changelog stream: the latest value per key, kept in `store` (queryable)."""

    # A windowed aggregation's table: how long after a window's end it closes (its grace; for
    # sessions, the gap plus grace), which `suppress(until_window_closes)` waits for. None otherwise.
    window_close_ms: int | None = None

    def __init__(self, builder: StreamsBuilder, node: Node, store: str, key_serde: Serde[Any],
                 value_serde: Serde[Any]) -> None:
        self._b, self.node, self.store = builder, node, store
        self.key_serde, self.value_serde = key_serde, value_serde

    def suppress(self, suppressed: Suppressed) -> KTable:
        """The table's updates held back (Kafka's KTable#suppress): until each window closes (a
        windowed aggregation's table only) or for a time limit; see topology/suppress.py. The
        result reads its values from this table's store (Kafka's view also looks in the buffer)."""
        b = self._b
        what = suppressed.name or "suppress"
        if suppressed.final_results and self.window_close_ms is None:
            raise TopologyError(what, "until_window_closes needs the table of a windowed aggregation "
                                      "(windowed_by(...).count/reduce/aggregate) directly before it")
        node_name = suppressed.name or b._name("KTABLE-SUPPRESS")
        store = f"{suppressed.name}-store" if suppressed.name else b._name("KTABLE-SUPPRESS-STATE-STORE")
        buffer = SuppressBufferSerde()
        b.add_state_store(StoreDefinition(store, buffer, buffer, queryable=False))
        op = Suppress(store, suppressed.final_results,
                      (self.window_close_ms or 0) if suppressed.final_results else suppressed.time_limit_ms,
                      suppressed.buffer, self.key_serde, self.value_serde)
        node = b._processor(self.node, "KTABLE-SUPPRESS", op, (store,), name=node_name)
        return KTable(b, node, self.store, self.key_serde, self.value_serde)

    def to_stream(self, name: str | None = None) -> KStream:
        """Every update of the table as a record (key, new value)."""
        node = self._b._processor(self.node, "KTABLE-TOSTREAM", Passthrough(), name=name)
        return KStream(self._b, node, self.key_serde, self.value_serde)
