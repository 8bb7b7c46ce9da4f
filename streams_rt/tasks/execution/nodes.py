"""Executable nodes, one per topology node per task. Each takes a list of records and forwards lists
to its children: per record only the user's function runs, which is what keeps Python's per-call
costs down. Fed one record at a time, the same nodes give Kafka's depth-first order.

An exception in user code becomes a UserCodeError naming the node and the record it failed on (whose
`source_index` leads the runner back to the input record's topic, partition and offset). Nodes that
map a whole list in one comprehension find the failing record by calling the user's function again
record by record, which only happens on that failure path."""

from __future__ import annotations

import itertools
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
from streams_rt.topology.processor import Processor, PunctuationType, Punctuator
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
        # time (windows' grace). Kept in the task's batch record, so a task that moves or restarts
        # judges late records as it would have where it was.
        self.stream_time_ms = -1
        # Depth-first: each record goes through the whole subgraph below before the next one, as
        # in Kafka. Lists are faster; the runner turns this on where paths meet again (a merge,
        # two sinks of one topic), since there a list at a time would reorder records.
        self.depth_first = False

    def process(self, records: list[Rec]) -> None:
        raise NotImplementedError

    def forward(self, records: list[Rec]) -> None:
        if not records:
            return
        if self.depth_first and (len(records) > 1 or len(self.children) > 1):
            for record in records:
                one = [record]
                for child in self.children:
                    child.process(one)
            return
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
        for record in records:
            branch = self._branch_of(record)
            if branch is None:
                continue
            if self.depth_first:
                self.children[branch].process([record])
            else:
                routed[branch].append(record)
        for child, batch in zip(self.children, routed, strict=True):
            if batch:
                child.process(batch)

    def _branch_of(self, record: Rec) -> int | None:
        """The child of the first predicate that holds, else the default one, if any."""
        try:
            for i, predicate in enumerate(self.predicates):
                if predicate(record[0], record[1]):
                    return i
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e
        return len(self.children) - 1 if self.has_default else None


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
    """count / reduce / aggregate by key through the store's cache; the cache forwards updates. As
    Kafka's KStreamAggregate: records with a null key or value are dropped, and an update's
    timestamp is the larger of the record's and the stored aggregate's."""

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
            current = table.load(key)
            try:
                if current is None:
                    new = aggregator(key, value, initializer())
                else:
                    new = aggregator(key, value, current[0])
                    if current[1] > timestamp:
                        timestamp = current[1]
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
            current = table.load(key) if hit is None else hit
            try:
                if current is None:
                    new = aggregator(key, value, initializer())
                else:
                    new = aggregator(key, value, current[0])
                    if current[1] > timestamp:
                        timestamp = current[1]
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            dirty[key] = (new, timestamp)
            if hit is None:
                table.added(key, new)  # may flush: the cache then has a new dict
                dirty = table.dirty


class WindowedAggregateExec(Exec):
    """Per window of each record, as Kafka's KStreamWindowAggregate: records with a null key are
    dropped (a null value is aggregated: the aggregator decides); a record is late (dropped) when its
    window ends at or before the stream time this node observed minus the grace period; an update's
    timestamp is the larger of the record's and the stored aggregate's."""

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
            if key is None:
                self.skipped.skip("null key")
                continue
            if timestamp > self.stream_time_ms:
                self.stream_time_ms = timestamp
            close = self.stream_time_ms - grace
            for start in spec.starts_for(timestamp):
                if start + size <= close:
                    self.skipped.skip(f"late: window [{start}, {start + size}) closed at stream time "
                                      f"{self.stream_time_ms} with grace {grace} ms")
                    continue
                current = windows.get_timestamped(key, start)
                updated = timestamp
                try:
                    if current is None:
                        new = aggregator(key, value, initializer())
                    else:
                        new = aggregator(key, value, current[0])
                        if current[1] > updated:
                            updated = current[1]
                except Exception as e:
                    raise UserCodeError(self.name, record, e) from e
                windows.put(key, start, new, updated)


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
            if value is None or (key is None and not left):
                continue  # dropped by Kafka's stream-table join too (a left join keeps a null key: no match)
            other = None if key is None else table.get(key)
            if other is None and not left:
                continue
            try:
                joined = joiner(value, other)
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            out.append((key, joined, record[2], record[3]))
        self.forward(out)


class TaskTime:
    """The task's stream time, as Kafka's PartitionGroup keeps it: the largest timestamp of the
    records the task has taken from its inputs, whichever node they reach. `at(i)` is the stream
    time while the chunk's i-th record (its source index) is processed; the runner fills `times`
    for each chunk before running it."""

    def __init__(self, wall_clock: Callable[[], int]) -> None:
        self.wall_clock = wall_clock
        self.stream_time_ms = -1  # after the last chunk
        self.times: list[int] = []  # prefix maxima of the current chunk's timestamps

    def start_chunk(self, timestamps: list[int]) -> None:
        current, times = self.stream_time_ms, []
        for ts in timestamps:
            if ts > current:
                current = ts
            times.append(current)
        self.times = times
        self.stream_time_ms = current

    def at(self, index: int) -> int:
        return self.times[index] if 0 <= index < len(self.times) else self.stream_time_ms


class _Schedule:
    """Kafka's PunctuationSchedule: due at `due_ms` (stream time: 0, so the first record triggers it;
    wall clock: one interval after scheduling), then at the next multiple of the interval past the
    time that fired it (a jump over several fires once)."""

    def __init__(self, interval_ms: int, punctuator: Punctuator, kind: PunctuationType, due_ms: int) -> None:
        self.interval_ms, self.punctuator, self.kind, self.due_ms = interval_ms, punctuator, kind, due_ms
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def fire_if_due(self, now: int) -> bool:
        if self.cancelled or now < self.due_ms:
            return False
        missed = (now - self.due_ms) // self.interval_ms
        self.due_ms += (missed + 1) * self.interval_ms
        self.punctuator(now)
        return True


class _Context:
    """What a user processor sees of its node (Kafka's ProcessorContext)."""

    def __init__(self, node: ProcessExec, task: TaskId, stores: dict[str, Any], time: TaskTime) -> None:
        self._node, self._task, self._stores, self._time = node, task, stores, time
        self.pending: list[tuple[str | None, Rec]] = []  # (child or None for all, record), in order
        self.schedules: list[_Schedule] = []
        self.source_index = -1  # of the input record being processed: stamped on what is forwarded

    @property
    def task_id(self) -> TaskId:
        return self._task

    @property
    def stream_time(self) -> int:
        return self._time.at(self.source_index)

    @property
    def wall_clock_time(self) -> int:
        return self._time.wall_clock()

    def forward(self, record: Record | Rec, child: str | None = None) -> None:
        if child is not None and child not in self._node.child_names():
            raise KeyError(f"processor {self._node.name} has no child {child!r}; "
                           f"its children are {self._node.child_names()}")
        if len(record) < 4 or record[3] < 0:
            record = (record[0], record[1], record[2], self.source_index)
        self.pending.append((child, record))

    def get_state_store(self, name: str) -> Any:
        try:
            return self._stores[name]
        except KeyError:
            raise KeyError(f"processor {self._node.name} has no store {name!r}; "
                           f"it was given {sorted(self._stores)}") from None

    def schedule(self, interval_ms: int, punctuator: Punctuator,
                 punctuation_type: PunctuationType = PunctuationType.STREAM_TIME) -> _Schedule:
        if interval_ms <= 0:
            raise ValueError(f"punctuation interval must be positive, got {interval_ms} ms")
        wall = punctuation_type is PunctuationType.WALL_CLOCK_TIME
        schedule = _Schedule(interval_ms, punctuator, punctuation_type,
                             self._time.wall_clock() + interval_ms if wall else 0)
        self.schedules.append(schedule)
        return schedule


def _child_of(entry: tuple[str | None, Rec]) -> str | None:
    return entry[0]


class ProcessExec(Exec):
    """A user processor, record by record; what it forwards goes downstream after each record.
    Stream-time punctuations are checked after every record the task takes in, as Kafka's task
    does, also those that never reach this node (filtered upstream, or routed elsewhere): they
    advance the task's stream time all the same."""

    def __init__(self, name: str, processor: Processor, task: TaskId, stores: dict[str, Any],
                 time: TaskTime) -> None:
        super().__init__(name)
        self.processor = processor
        self.time = time
        self.context = _Context(self, task, stores, time)
        self._checked = -1  # the last source index whose stream time punctuations were checked at
        processor.init(self.context)

    def child_names(self) -> list[str]:
        return [c.name for c in self.children]

    def process(self, records: list[Rec]) -> None:
        context, processor = self.context, self.processor
        for record in records:
            index = record[3]
            self._catch_up(index - 1, record)
            context.source_index = index
            try:
                processor.process(_as_record(Record, record))
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            self._emit()
            self._catch_up(index, record)

    def end_chunk(self) -> None:
        """The runner's chunk is done: punctuate at the stream times of its records that came
        after the last one this node saw; the next chunk's indexes start again at 0."""
        self._catch_up(len(self.time.times) - 1, None)
        self._checked = -1

    def punctuate_wall_clock(self, now: int) -> None:
        """Run the wall-clock punctuations due at `now` (the runner calls it once per batch)."""
        self._fire(PunctuationType.WALL_CLOCK_TIME, now, None)

    def _catch_up(self, index: int, record: Rec | None) -> None:
        """Stream-time punctuations at each task record up to `index` not yet checked."""
        while self._checked < index:
            self._checked += 1
            self.context.source_index = self._checked
            self._fire(PunctuationType.STREAM_TIME, self.time.at(self._checked), record)

    def _fire(self, kind: PunctuationType, now: int, record: Rec | None) -> None:
        context = self.context
        for schedule in context.schedules:
            if schedule.kind is not kind:
                continue
            try:
                fired = schedule.fire_if_due(now)
            except Exception as e:
                raise UserCodeError(self.name, record or (None, None, now, context.source_index), e) from e
            if fired:
                self._emit()
        context.schedules = [s for s in context.schedules if not s.cancelled]

    def _emit(self) -> None:
        """What the processor forwarded, in the order it did: runs forwarded to the same child (or
        to all) go as one list."""
        pending = self.context.pending
        if not pending:
            return
        self.context.pending = []
        for child_name, run in itertools.groupby(pending, key=_child_of):
            records = [record for _, record in run]
            if child_name is None:
                self.forward(records)
                continue
            for child in self.children:
                if child.name == child_name:
                    child.process(records)

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
