"""Table operators, record by record as Kafka Streams' KTable processors run them: the table's source
(KTableSource), filter and map_values (KTableFilter, KTableMapValues), to_stream, the re-keying of
a grouped table (KTableRepartitionMap) and its aggregation with a subtractor (KTableAggregate,
KTableReduce), the two sides of a table-table join and their merger (KTableKTable*Join,
KTableKTableJoinMerger), a cogroup's pass-through, and the stream-table join (KStreamKTableJoin).

Table operators take and forward `Change`s. A materialized operator writes its store through the
task's record cache and forwards what the cache forwards (at once with caching off, at the flush
with it on, old values from the store), as Kafka's TimestampedTupleForwarder and cache flush
listener do; an unmaterialized one forwards its changes itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streams_rt.protocol import TaskId
from streams_rt.state.stores import StateStore
from streams_rt.tasks.execution.base import Exec, PassthroughExec, SkipCounter, UserCodeError
from streams_rt.tasks.execution.caching import CachedKeyValue
from streams_rt.tasks.execution.chunk import Chunk, Rec
from streams_rt.tasks.execution.getters import StoreAccess, lookup
from streams_rt.topology.changes import Change
from streams_rt.topology.joins import JoinKind
from streams_rt.topology.nodes import Join, ProcessorNode, TableSource
from streams_rt.topology.table_ops import (
    TableAggregate,
    TableFilter,
    TableJoin,
    TableJoinMerge,
    TableMapValues,
    TablePassThrough,
    TableSelect,
    ToStream,
)


class TableServices(StoreAccess, Protocol):
    """What building a table operator needs of the task's runner."""

    task: TaskId

    def raw_store(self, name: str) -> StateStore: ...


def build_table_exec(services: TableServices, node: ProcessorNode) -> Exec | None:
    """The executable node for a table operator (None: not one)."""
    from streams_rt.tasks.execution.fk_join import build_fk_exec

    op, name = node.operation, node.name
    if isinstance(op, TableSource):
        table = None if op.store is None else services.kv_cache(op.store)
        source = TableSourceExec(name, table)
        if table is not None:
            table.forward_to(source.forward_rows, changes=True, send_old_values=node.send_old_values)
        return source
    if isinstance(op, ToStream):
        return ToStreamExec(name)
    if isinstance(op, TablePassThrough):
        return PassthroughExec(name)
    if isinstance(op, Join):
        return StreamTableJoinExec(name, op, services)
    if isinstance(op, (TableFilter, TableMapValues, TableJoinMerge)):
        cache = None if op.store is None else services.kv_cache(op.store)
        exec_node: _Materializing = {TableFilter: TableFilterExec, TableMapValues: TableMapValuesExec,
                                     TableJoinMerge: JoinMergeExec}[type(op)](node, op, cache)
        if cache is not None:
            cache.forward_to(exec_node.forward_rows, changes=True, send_old_values=node.send_old_values)
        return exec_node
    if isinstance(op, TableSelect):
        return TableSelectExec(name, op)
    if isinstance(op, TableAggregate):
        aggregate = services.kv_cache(op.store)
        aggregate_exec = TableAggregateExec(name, op, aggregate)
        aggregate.forward_to(aggregate_exec.forward_rows, changes=True, send_old_values=node.send_old_values)
        return aggregate_exec
    if isinstance(op, TableJoin):
        return TableJoinExec(node, op, services)
    return build_fk_exec(services, node)


class _PerRecord(Exec):
    """A node that runs a step per record: user code failing in it names the node and the record;
    what a downstream node raises (the cache forwards at once with caching off) passes through."""

    def process(self, chunk: Chunk) -> None:
        out: list[Rec] = []
        for record in chunk.rows():
            try:
                self.step(record, out)
            except UserCodeError:
                raise
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
        self.forward_rows(out)

    def step(self, record: Rec, out: list[Rec]) -> None:
        raise NotImplementedError


class TableSourceExec(_PerRecord):
    """The latest value per key (None deletes; a null key is dropped): into the store when
    materialized (its cache forwards each change), else forwarded as Change(value, None)."""

    def __init__(self, name: str, table: CachedKeyValue | None) -> None:
        super().__init__(name)
        self.table = table
        self.skipped = SkipCounter(name)

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, value, timestamp, index = record
        if key is None:
            self.skipped.skip("null key")
        elif self.table is not None:
            self.table.put(key, value, timestamp)
        else:
            out.append((key, Change(value, None), timestamp, index))


class ToStreamExec(Exec):
    def process(self, chunk: Chunk) -> None:
        self.forward_rows([(r[0], r[1].new, r[2], r[3]) for r in chunk.rows()])


class _Materializing(_PerRecord):
    """A table operator that keeps its result in a store when named (`cache`), else forwards it."""

    def __init__(self, node: ProcessorNode, op: Any, cache: CachedKeyValue | None) -> None:
        super().__init__(node.name)
        self.cache, self.send_old_values = cache, node.send_old_values

    def emit(self, record: Rec, new: Any, old: Any, out: list[Rec], timestamp: int | None = None) -> None:
        stamp = record[2] if timestamp is None else timestamp
        if self.cache is not None:
            self.cache.put(record[0], new, stamp, old, old_known=True)
        else:
            out.append((record[0], Change(new, old if self.send_old_values else None), stamp, record[3]))


class TableFilterExec(_Materializing):
    """A rejected value becomes a delete; with old values known, a change that is a delete on
    both sides is not sent at all (Kafka's KTableFilter)."""

    def __init__(self, node: ProcessorNode, op: TableFilter, cache: CachedKeyValue | None) -> None:
        super().__init__(node, op, cache)
        self.predicate, self.filter_not = op.predicate, op.filter_not

    def _kept(self, key: Any, value: Any) -> Any:
        return value if value is not None and self.filter_not != bool(self.predicate(key, value)) else None

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, change = record[0], record[1]
        new = self._kept(key, change.new)
        old = None
        if self.send_old_values:
            old = self.cache.get(key) if self.cache is not None else self._kept(key, change.old)
            if old is None and new is None:
                return
        self.emit(record, new, old, out)


class TableMapValuesExec(_Materializing):
    def __init__(self, node: ProcessorNode, op: TableMapValues, cache: CachedKeyValue | None) -> None:
        super().__init__(node, op, cache)
        self.mapper = op.mapper

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, change = record[0], record[1]
        mapper = self.mapper
        new = None if change.new is None else mapper(change.new)
        old = None
        if self.send_old_values:
            if self.cache is not None:
                old = self.cache.get(key)
            elif change.old is not None:
                old = mapper(change.old)
        self.emit(record, new, old, out)


class JoinMergeExec(_Materializing):
    def step(self, record: Rec, out: list[Rec]) -> None:
        self.emit(record, record[1].new, record[1].old, out)


class TableSelectExec(_PerRecord):
    """selector(key, value) of the new and the old value: one change when the new key is the old
    one, else a subtract (old key) before an add (new key); pairs with a null key or value are not
    sent (Kafka's KTableRepartitionMap)."""

    def __init__(self, name: str, op: TableSelect) -> None:
        super().__init__(name)
        self.selector = op.selector

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, change, timestamp, index = record
        if key is None:
            raise ValueError("a grouped table's record has a null key")
        new = _pair(None if change.new is None else self.selector(key, change.new))
        old = _pair(None if change.old is None else self.selector(key, change.old))
        if new is not None and old is not None and old[0] == new[0]:
            out.append((old[0], Change(new[1], old[1]), timestamp, index))
            return
        if old is not None:
            out.append((old[0], Change(None, old[1]), timestamp, index))
        if new is not None:
            out.append((new[0], Change(new[1], None), timestamp, index))


def _pair(selected: Any) -> tuple[Any, Any] | None:
    """A selector's (key, value), or None where it gave none or one with a null key or value."""
    if selected is None or selected[0] is None or selected[1] is None:
        return None
    return selected[0], selected[1]


class TableAggregateExec(_PerRecord):
    """The old value subtracted, then the new one added; the update's timestamp the larger of the
    record's and the stored aggregate's (Kafka's KTableAggregate; KTableReduce when there is no
    initializer: a key's first value is its first aggregate, and a None aggregate deletes)."""

    def __init__(self, name: str, op: TableAggregate, table: CachedKeyValue) -> None:
        super().__init__(name)
        self.op, self.table = op, table

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, change, timestamp = record[0], record[1], record[2]
        if key is None:
            raise ValueError(f"a record with a null key reached the aggregation into {self.op.store}")
        op = self.op
        reduce = op.initializer is None
        current = self.table.get_timestamped(key)
        old_agg = None if current is None else current[0]
        stamp = timestamp
        aggregate = old_agg
        if change.old is not None and old_agg is not None:
            assert current is not None
            aggregate = op.subtractor(old_agg, change.old) if reduce else op.subtractor(key, change.old, old_agg)
            stamp = max(timestamp, current[1])
        if change.new is not None:
            if reduce:
                if aggregate is None:
                    aggregate = change.new
                else:
                    aggregate = op.adder(aggregate, change.new)
                    assert current is not None
                    stamp = max(timestamp, current[1])
            else:
                assert op.initializer is not None
                aggregate = op.adder(key, change.new, op.initializer() if aggregate is None else aggregate)
                if current is not None:
                    stamp = max(timestamp, current[1])
        self.table.put(key, aggregate, stamp, old_agg, old_known=True)


class TableJoinExec(_PerRecord):
    """One side of a table-table join: each change of this side joined with the other side's
    current value, timestamped with the later of the two (Kafka's KTableKTable*Join processors;
    `kind` RIGHT is a left join's other side). A null key is dropped."""

    def __init__(self, node: ProcessorNode, op: TableJoin, stores: StoreAccess) -> None:
        super().__init__(node.name)
        self.kind, self.joiner, self.other = op.kind, op.joiner, lookup(op.other, stores)
        self.send_old_values = node.send_old_values
        self.skipped = SkipCounter(node.name)

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, change, timestamp, index = record
        if key is None:
            self.skipped.skip("null key")
            return
        found, joiner, kind = self.other(key), self.joiner, self.kind
        other = None if found is None else found[0]
        new = old = None
        if kind is JoinKind.INNER or kind is JoinKind.RIGHT:
            if found is None:
                return
            stamp = max(timestamp, found[1])
            if kind is JoinKind.RIGHT:  # the left side's value is there: the join has a result
                new = joiner(change.new, other)
                old = joiner(change.old, other) if self.send_old_values else None
            else:
                new = None if change.new is None else joiner(change.new, other)
                old = joiner(change.old, other) if self.send_old_values and change.old is not None else None
        else:
            if found is None:
                if change.new is None and change.old is None:
                    return
                stamp = timestamp
            else:
                stamp = max(timestamp, found[1])
            outer = kind is JoinKind.OUTER and found is not None
            if change.new is not None or outer:
                new = joiner(change.new, other)
            if self.send_old_values and (change.old is not None or outer):
                old = joiner(change.old, other)
        out.append((key, Change(new, old), stamp, index))


class StreamTableJoinExec(_PerRecord):
    """Each stream record joined with the table's current value for its key, or for
    key_mapper(key, value) (a global table's join). A null value is dropped, and a null key (or
    mapped key) too, except by a left join of a record with a null key, which joins it with None
    (KIP-962; Kafka's KStreamKTableJoinProcessor)."""

    def __init__(self, name: str, op: Join, stores: StoreAccess) -> None:
        super().__init__(name)
        self.joiner, self.left, self.key_mapper = op.joiner, op.left, op.key_mapper
        self.table: Callable[[Any], Any] = lookup(op.table, stores)
        self.skipped = SkipCounter(name)

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, value = record[0], record[1]
        mapped = key if self.key_mapper is None else self.key_mapper(key, value)
        if not (self.left and key is None and value is not None) and (mapped is None or value is None):
            self.skipped.skip("null join key or value")
            return
        found = None if mapped is None else self.table(mapped)
        if found is None and not self.left:
            return
        out.append((key, self.joiner(value, None if found is None else found[0]), record[2], record[3]))
