"""Executable nodes, one per topology node per task. Each takes a list of records and forwards lists
to its children: per record only the user's function runs, which is what keeps Python's per-call
costs down. Fed one record at a time, the same nodes give Kafka's depth-first order.

An exception in user code becomes a UserCodeError naming the node and the record it failed on (whose
`source_index` leads the runner back to the input record's topic, partition and offset). Nodes that
map a whole list in one comprehension find the failing record by calling the user's function again
record by record, which only happens on that failure path."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from streams_rt.protocol import TaskId
from streams_rt.tasks.execution.caching import CachedKeyValue, CachedWindows
from streams_rt.topology import Record, Serde
from streams_rt.topology.nodes import (
    Aggregate,
    Branch,
    Filter,
    FlatMap,
    FlatMapValues,
    Join,
    Map,
    MapValues,
    Peek,
    SelectKey,
)
from streams_rt.topology.processor import Processor, Punctuator
from streams_rt.topology.windows import TimeWindows

log = logging.getLogger(__name__)

# Records inside the runtime are plain tuples (key, value, timestamp, source_index): a NamedTuple's
# constructor costs about a microsecond a record. User processors get `Record`s (the same layout).
Rec = tuple[Any, Any, int, int]
_as_record = tuple.__new__

# (topic, serialized key, serialized value, timestamp, key, value): what a sink emits.
SinkRecord = tuple[str, bytes | None, bytes | None, int, Any, Any]


class UserCodeError(Exception):
    """User code (or a serde) raised while node `node` processed `record`."""

    def __init__(self, node: str, record: Rec, cause: BaseException) -> None:
        super().__init__(f"{node} failed on record (key={_short(record[0])}, value={_short(record[1])}, "
                         f"timestamp={record[2]}): {type(cause).__name__}: {cause}")
        self.node, self.record, self.cause = node, record, cause


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class Exec:
    def __init__(self, name: str) -> None:
        self.name = name
        self.children: list[Exec] = []
        # The largest record timestamp this node has seen (-1: none), for nodes that act on stream
        # time (windows' grace, punctuation). Kept in the task's batch record, so a task that moves
        # or restarts judges late records as it would have where it was.
        self.stream_time_ms = -1

    def process(self, records: list[Rec]) -> None:
        raise NotImplementedError

    def forward(self, records: list[Rec]) -> None:
        if records:
            for child in self.children:
                child.process(records)

    def close(self) -> None:
        """Release what the node holds (user processors are closed)."""

    def _locate(self, records: list[Rec], call: Callable[[Rec], Any], cause: BaseException) -> UserCodeError:
        """The failure of a whole-list step, pinned to the first record the step fails on again."""
        for record in records:
            try:
                call(record)
            except Exception as again:  # noqa: BLE001 - this is the user's exception, reported
                return UserCodeError(self.name, record, again)
        return UserCodeError(self.name, records[0], cause)


class PassthroughExec(Exec):
    def __init__(self, name: str, op: object = None) -> None:
        super().__init__(name)

    def process(self, records: list[Rec]) -> None:
        self.forward(records)


class FilterExec(Exec):
    def __init__(self, name: str, op: Filter) -> None:
        super().__init__(name)
        self.predicate = op.predicate

    def process(self, records: list[Rec]) -> None:
        predicate = self.predicate
        try:
            kept = [r for r in records if predicate(r[0], r[1])]
        except Exception as e:
            raise self._locate(records, lambda r: predicate(r[0], r[1]), e) from e
        self.forward(kept)


class MapExec(Exec):
    def __init__(self, name: str, op: Map) -> None:
        super().__init__(name)
        self.mapper = op.mapper

    def process(self, records: list[Rec]) -> None:
        mapper = self.mapper
        try:
            mapped = [(k, v, r[2], r[3]) for r in records for k, v in (mapper(r[0], r[1]),)]
        except Exception as e:
            raise self._locate(records, lambda r: [(k, v) for k, v in (mapper(r[0], r[1]),)], e) from e
        self.forward(mapped)


class MapValuesExec(Exec):
    def __init__(self, name: str, op: MapValues) -> None:
        super().__init__(name)
        self.mapper = op.mapper

    def process(self, records: list[Rec]) -> None:
        mapper = self.mapper
        try:
            mapped = [(r[0], mapper(r[1]), r[2], r[3]) for r in records]
        except Exception as e:
            raise self._locate(records, lambda r: mapper(r[1]), e) from e
        self.forward(mapped)


class SelectKeyExec(Exec):
    def __init__(self, name: str, op: SelectKey) -> None:
        super().__init__(name)
        self.mapper = op.mapper

    def process(self, records: list[Rec]) -> None:
        mapper = self.mapper
        try:
            keyed = [(mapper(r[0], r[1]), r[1], r[2], r[3]) for r in records]
        except Exception as e:
            raise self._locate(records, lambda r: mapper(r[0], r[1]), e) from e
        self.forward(keyed)


class FlatMapExec(Exec):
    def __init__(self, name: str, op: FlatMap) -> None:
        super().__init__(name)
        self.mapper = op.mapper

    def process(self, records: list[Rec]) -> None:
        mapper = self.mapper
        try:
            mapped = [(k, v, r[2], r[3]) for r in records for k, v in mapper(r[0], r[1])]
        except Exception as e:
            raise self._locate(records, lambda r: [(k, v) for k, v in mapper(r[0], r[1])], e) from e
        self.forward(mapped)


class FlatMapValuesExec(Exec):
    def __init__(self, name: str, op: FlatMapValues) -> None:
        super().__init__(name)
        self.mapper = op.mapper

    def process(self, records: list[Rec]) -> None:
        mapper = self.mapper
        try:
            mapped = [(r[0], v, r[2], r[3]) for r in records for v in mapper(r[1])]
        except Exception as e:
            raise self._locate(records, lambda r: list(mapper(r[1])), e) from e
        self.forward(mapped)


class PeekExec(Exec):
    def __init__(self, name: str, op: Peek) -> None:
        super().__init__(name)
        self.action = op.action

    def process(self, records: list[Rec]) -> None:
        action = self.action
        record = records[0]
        try:
            for record in records:
                action(record[0], record[1])
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e
        self.forward(records)


class BranchExec(Exec):
    def __init__(self, name: str, op: Branch) -> None:
        super().__init__(name)
        self.predicates = op.predicates
        self.has_default = op.has_default

    def process(self, records: list[Rec]) -> None:
        routed: list[list[Rec]] = [[] for _ in self.children]
        predicates = self.predicates
        record = records[0]
        try:
            for record in records:
                for i, predicate in enumerate(predicates):
                    if predicate(record[0], record[1]):
                        routed[i].append(record)
                        break
                else:
                    if self.has_default:
                        routed[-1].append(record)
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e
        for child, batch in zip(self.children, routed, strict=True):
            if batch:
                child.process(batch)


class SkipCounter:
    """Records an operator drops by Kafka's rules (null keys or values into an aggregation, late
    records into a closed window): counted, and logged once per node."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.count = 0

    def skip(self, why: str) -> None:
        if not self.count:
            log.warning("%s: dropping a record: %s (further drops are counted, not logged)", self.node, why)
        self.count += 1


class AggregateExec(Exec):
    """count / reduce / aggregate by key through the store's cache; the cache forwards updates."""

    def __init__(self, name: str, op: Aggregate, table: CachedKeyValue) -> None:
        super().__init__(name)
        self.initializer, self.aggregator, self.table = op.initializer, op.aggregator, table
        self.skipped = SkipCounter(name)

    def process(self, records: list[Rec]) -> None:
        if self.table.caching:
            self._into_cache(records)
            return
        table, initializer, aggregator = self.table, self.initializer, self.aggregator
        for record in records:
            key, value, timestamp = record[0], record[1], record[2]
            if key is None or value is None:
                self.skipped.skip("null key or value")
                continue
            current = table.get(key)
            try:
                new = aggregator(key, value, initializer() if current is None else current)
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            table.put(key, new, timestamp)

    def _into_cache(self, records: list[Rec]) -> None:
        """The same with the cache's dict in hand: the hot loop of every aggregation (a key's
        entry is popped and put back, so the least recently written flush first)."""
        table, initializer, aggregator = self.table, self.initializer, self.aggregator
        dirty = table.dirty
        for record in records:
            key, value, timestamp = record[0], record[1], record[2]
            if key is None or value is None:
                self.skipped.skip("null key or value")
                continue
            hit = dirty.pop(key, None)
            current = table.load(key) if hit is None else hit[0]
            try:
                new = aggregator(key, value, initializer() if current is None else current)
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            dirty[key] = (new, timestamp)
            if hit is None:
                table.added(key, new)  # may flush: the cache then has a new dict
                dirty = table.dirty


class WindowedAggregateExec(Exec):
    """Per window of each record, as Kafka's KStreamWindowAggregate: a record is late (dropped) when
    its window ends at or before the stream time this node observed minus the grace period."""

    def __init__(self, name: str, op: Aggregate, spec: TimeWindows, windows: CachedWindows) -> None:
        super().__init__(name)
        self.spec = spec
        self.initializer, self.aggregator, self.windows = op.initializer, op.aggregator, windows
        self.skipped = SkipCounter(name)

    def process(self, records: list[Rec]) -> None:
        spec, windows, initializer, aggregator = self.spec, self.windows, self.initializer, self.aggregator
        size, grace = spec.size_ms, spec.grace_ms
        for record in records:
            key, value, timestamp = record[0], record[1], record[2]
            if key is None or value is None:
                self.skipped.skip("null key or value")
                continue
            if timestamp > self.stream_time_ms:
                self.stream_time_ms = timestamp
            close = self.stream_time_ms - grace
            for start in spec.starts_for(timestamp):
                if start + size <= close:
                    self.skipped.skip(f"late: window [{start}, {start + size}) closed at stream time "
                                      f"{self.stream_time_ms} with grace {grace} ms")
                    continue
                current = windows.get(key, start)
                try:
                    new = aggregator(key, value, initializer() if current is None else current)
                except Exception as e:
                    raise UserCodeError(self.name, record, e) from e
                windows.put(key, start, new, timestamp)


class TableSourceExec(Exec):
    """The latest value per key (None deletes); the cache forwards each change."""

    def __init__(self, name: str, table: CachedKeyValue) -> None:
        super().__init__(name)
        self.table = table
        self.skipped = SkipCounter(name)

    def process(self, records: list[Rec]) -> None:
        table = self.table
        for key, value, timestamp, _ in records:
            if key is None:
                self.skipped.skip("null key")
                continue
            table.put(key, value, timestamp)


class JoinExec(Exec):
    def __init__(self, name: str, op: Join, table: CachedKeyValue) -> None:
        super().__init__(name)
        self.joiner, self.left, self.table = op.joiner, op.left, table

    def process(self, records: list[Rec]) -> None:
        table, joiner, left = self.table, self.joiner, self.left
        out = []
        for record in records:
            key, value = record[0], record[1]
            if key is None or value is None:
                continue  # Kafka's stream-table join drops these too
            other = table.get(key)
            if other is None and not left:
                continue
            try:
                joined = joiner(value, other)
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            out.append((key, joined, record[2], record[3]))
        self.forward(out)


class _Schedule:
    """Kafka's PunctuationSchedule on stream time: first due at 0 (so the first record triggers it),
    then at multiples of the interval; a jump over several fires once."""

    def __init__(self, interval_ms: int, punctuator: Punctuator) -> None:
        self.interval_ms, self.punctuator = interval_ms, punctuator
        self.due_ms = 0
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def fire_if_due(self, stream_time: int) -> None:
        if self.cancelled or stream_time < self.due_ms:
            return
        missed = (stream_time - self.due_ms) // self.interval_ms
        self.due_ms += (missed + 1) * self.interval_ms
        self.punctuator(stream_time)


class _Context:
    """What a user processor sees of its node (Kafka's ProcessorContext)."""

    def __init__(self, node: ProcessExec, task: TaskId, stores: dict[str, Any]) -> None:
        self._node, self._task, self._stores = node, task, stores
        self.pending: dict[str | None, list[Rec]] = {}
        self.schedules: list[_Schedule] = []
        self.source_index = -1  # of the input record being processed: stamped on what is forwarded

    @property
    def task_id(self) -> TaskId:
        return self._task

    @property
    def stream_time(self) -> int:
        return self._node.stream_time_ms

    def forward(self, record: Record | Rec, child: str | None = None) -> None:
        if child is not None and child not in self._node.child_names():
            raise KeyError(f"processor {self._node.name} has no child {child!r}; "
                           f"its children are {self._node.child_names()}")
        if len(record) < 4 or record[3] < 0:
            record = (record[0], record[1], record[2], self.source_index)
        self.pending.setdefault(child, []).append(record)

    def get_state_store(self, name: str) -> Any:
        try:
            return self._stores[name]
        except KeyError:
            raise KeyError(f"processor {self._node.name} has no store {name!r}; "
                           f"it was given {sorted(self._stores)}") from None

    def schedule(self, interval_ms: int, punctuator: Punctuator) -> _Schedule:
        if interval_ms <= 0:
            raise ValueError(f"punctuation interval must be positive, got {interval_ms} ms")
        schedule = _Schedule(interval_ms, punctuator)
        self.schedules.append(schedule)
        return schedule


class ProcessExec(Exec):
    """A user processor, record by record; what it forwards goes downstream after each record, and
    its punctuations run on the stream time of the records it has seen."""

    def __init__(self, name: str, processor: Processor, task: TaskId, stores: dict[str, Any]) -> None:
        super().__init__(name)
        self.processor = processor
        self.context = _Context(self, task, stores)
        processor.init(self.context)

    def child_names(self) -> list[str]:
        return [c.name for c in self.children]

    def process(self, records: list[Rec]) -> None:
        context, processor = self.context, self.processor
        for record in records:
            if record[2] > self.stream_time_ms:
                self.stream_time_ms = record[2]
            context.source_index = record[3]
            try:
                processor.process(_as_record(Record, record))
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            self._emit()
            for schedule in context.schedules:
                try:
                    schedule.fire_if_due(self.stream_time_ms)
                except Exception as e:
                    raise UserCodeError(self.name, record, e) from e
                self._emit()
            context.schedules = [s for s in context.schedules if not s.cancelled]

    def _emit(self) -> None:
        pending = self.context.pending
        if not pending:
            return
        self.context.pending = {}
        for child_name, batch in pending.items():
            for child in self.children:
                if child_name is None or child.name == child_name:
                    child.process(batch)

    def close(self) -> None:
        self.processor.close()


class SinkExec(Exec):
    """Serializes and hands each record to `emit` (the task's producer, and the output rows for a
    topology output)."""

    def __init__(self, name: str, topic: str, keys: Serde[Any], values: Serde[Any],
                 emit: Callable[[list[SinkRecord]], None]) -> None:
        super().__init__(name)
        self.topic, self.keys, self.values, self.emit = topic, keys, values, emit

    def process(self, records: list[Rec]) -> None:
        topic, kser, vser = self.topic, self.keys.serialize, self.values.serialize
        keys, values = [r[0] for r in records], [r[1] for r in records]
        try:
            rows = [(topic, k, v, r[2], r[0], r[1]) for r, k, v in
                    zip(records, self.keys.serialize_many(keys), self.values.serialize_many(values), strict=True)]
        except Exception as e:
            raise self._locate(records, lambda r: (kser(r[0]), vser(r[1])), e) from e
        self.emit(rows)
