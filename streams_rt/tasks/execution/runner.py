"""Runs one task's subtopology over batches of input records.

A batch's records are merged by timestamp across the task's input partitions (within a partition
they stay in offset order), cut into runs of one source topic, deserialized, and handed to that
source's children as one list. Sinks serialize what reaches them and pass it to `send` (the task's
producer); what reaches an output sink (not a repartition topic) is also kept as output rows. The
record caches flush at the end of each batch (`flush`)."""

from __future__ import annotations

import enum
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow.compute as pc
from confluent_kafka import Message

from streams_rt.protocol import TaskId
from streams_rt.state.stores import KeyValueStore, StateStore, WindowStore
from streams_rt.state.stores.typed import TypedKeyValueStore, TypedWindowStore
from streams_rt.tasks.execution.aggregation import AggregateExec, WindowedAggregateExec
from streams_rt.tasks.execution.base import Exec, PassthroughExec, UserCodeError
from streams_rt.tasks.execution.caching import (
    CachedKeyValue,
    CachedSessions,
    CachedWindowRanges,
    CachedWindows,
    PartialsCache,
    TaskCache,
)
from streams_rt.tasks.execution.chunk import Chunk, Column, Rec
from streams_rt.tasks.execution.columnar import (
    ExplodeValuesExec,
    FieldExec,
    FilterExpressionExec,
    MapBatchesExec,
)
from streams_rt.tasks.execution.emit import KAFKA_EMIT_INTERVALS, EmitIntervals, TimeTracker, WindowCloseEmitter
from streams_rt.tasks.execution.processor import ProcessExec, TaskTime
from streams_rt.tasks.execution.session import SessionAggregateExec
from streams_rt.tasks.execution.sink import SinkExec, SinkOutput
from streams_rt.tasks.execution.sliding import SlidingAggregateExec
from streams_rt.tasks.execution.stateless import (
    BranchExec,
    FilterExec,
    FlatMapExec,
    FlatMapValuesExec,
    MapExec,
    MapValuesExec,
    PeekExec,
    SelectKeyExec,
)
from streams_rt.tasks.execution.stream_joins import JoinWindowExec, StreamJoinExec
from streams_rt.tasks.execution.suppress import SuppressExec
from streams_rt.tasks.execution.tables import JoinExec, TableSourceExec
from streams_rt.tasks.execution.window_close import WindowCloseAggregateExec
from streams_rt.topology import Subtopology, Topology
from streams_rt.topology.columns import Field, MapBatches, Split, Value, Words
from streams_rt.topology.joins import JoinWindowPut, StreamStreamJoin
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
    Passthrough,
    Peek,
    Process,
    ProcessorNode,
    SelectKey,
    SinkNode,
    SourceNode,
    TableSource,
)
from streams_rt.topology.suppress import Suppress
from streams_rt.topology.topology import internal_name
from streams_rt.topology.windowed import SessionAggregate, SlidingAggregate

log = logging.getLogger(__name__)


class DeserializationHandler(enum.Enum):
    """`default.deserialization.exception.handler`."""

    FAIL = "fail"
    LOG_AND_CONTINUE = "log_and_continue"


class ProcessingFailed(Exception):
    """A batch failed on one input record: which one (topic, partition, offset) and why."""

    def __init__(self, task: TaskId, topic: str, partition: int, offset: int, reason: str) -> None:
        super().__init__(f"task {task}: record {topic}-{partition}@{offset}: {reason}")
        self.task, self.topic, self.partition, self.offset, self.reason = task, topic, partition, offset, reason


class DeserializationFailed(ProcessingFailed):
    """A record that its source's serdes cannot read, under the `fail` handler."""


TASK_STREAM_TIME = ""  # the task's stream time among the nodes' in `stream_times`

Send = Callable[[str, Iterable[tuple[bytes | None, bytes | None, int]]], None]  # topic, (key, value, timestamp)...


class SubtopologyRunner:
    def __init__(
        self,
        topology: Topology,
        subtopology: Subtopology,
        task: TaskId,
        application_id: str,
        stores: Mapping[str, StateStore],
        send: Send,
        *,
        cache_max_bytes: int = 0,
        deserialization_handler: DeserializationHandler = DeserializationHandler.FAIL,
        wall_clock: Callable[[], int] = lambda: int(time.time() * 1000),
        columnar: bool = True,
        emit_intervals: EmitIntervals = KAFKA_EMIT_INTERVALS,
    ) -> None:
        """`wall_clock`: epoch ms for wall-clock punctuations and emit throttles (the
        TopologyTestDriver's own clock under test). `columnar` False runs every record alone through
        the graph, depth-first, and every aggregation record by record: the reference the per-batch
        path is held equal to (tests). `emit_intervals`: see execution/emit.py."""
        self.task = task
        self.time = TaskTime(wall_clock)
        self._emit_intervals = emit_intervals
        self._join_trackers: dict[str, TimeTracker] = {}  # a stream-stream join's, shared by its sides
        self._send = send
        self._handler = deserialization_handler
        self.cache = TaskCache(cache_max_bytes)
        self.output: list[SinkOutput] = []  # what the output sinks wrote since the last take_output
        self.skipped_deserialization = 0
        self._definitions = topology.stores
        self._stores = stores
        self._cached: dict[str, CachedKeyValue | CachedWindows | CachedSessions] = {}
        self._execs: dict[str, Exec] = {}
        self._committed_stream_times: dict[str, int] = {}
        self._sources: dict[str, tuple[SourceNode, Exec]] = {}  # full topic name -> source
        for node in subtopology.nodes:
            self._execs[node.name] = self._build(node, application_id)
        self._processors = [e for e in self._execs.values() if isinstance(e, ProcessExec)]
        if paths_meet(subtopology) or not columnar:
            for exec_node in self._execs.values():
                exec_node.depth_first = True
        if not columnar:
            for exec_node in self._execs.values():
                exec_node.columnar = False
        for node in subtopology.nodes:
            self._execs[node.name].children = [self._execs[c.name] for c in node.children]
        for node in subtopology.nodes:
            if isinstance(node, SourceNode):
                for topic in node.topics:
                    full = internal_name(application_id, topic) if node.internal else topic
                    self._sources[full] = (node, self._execs[node.name])
        # Sources whose every child takes whole columns decode to Arrow, the others to Python values.
        self._columnar_sources = {source.name: all(child.columnar for child in source_exec.children)
                                  for source, source_exec in self._sources.values()}

    # -- building ----------------------------------------------------------------------------
    def _build(self, node: Node, application_id: str) -> Exec:
        if isinstance(node, SourceNode):
            return PassthroughExec(node.name)
        if isinstance(node, SinkNode):
            topic = internal_name(application_id, node.topic) if node.internal else node.topic
            assert node.key_serde is not None and node.value_serde is not None  # the DSL always sets them
            return SinkExec(node.name, topic, node.key_serde, node.value_serde,
                            self._send_internal if node.internal else self._send_output)
        assert isinstance(node, ProcessorNode)
        op = node.operation
        columnar = _columnar_exec(op)
        if columnar is not None:
            return columnar(node.name, op)
        stateless = _STATELESS.get(type(op))
        if stateless is not None:
            return stateless(node.name, op)
        if isinstance(op, Aggregate):
            return self._aggregate(node.name, op)
        if isinstance(op, TableSource):
            table = self._kv_cache(op.store)
            exec_node = TableSourceExec(node.name, table)
            table.forward_to(exec_node.forward_rows)
            return exec_node
        if isinstance(op, Join):
            return JoinExec(node.name, op, self._kv_cache(op.store))
        if isinstance(op, (JoinWindowPut, StreamStreamJoin)):
            return self._stream_join(node.name, op)
        if isinstance(op, (SessionAggregate, SlidingAggregate)):
            return self._windowed(node.name, op)
        if isinstance(op, Suppress):
            buffer = self._stores[op.store]
            assert isinstance(buffer, KeyValueStore)
            return SuppressExec(node.name, op, buffer)
        if isinstance(op, Process):
            typed = {name: self._typed_store(name) for name in op.stores}
            return ProcessExec(node.name, op.supplier(), self.task, typed, self.time)
        raise TypeError(f"{node.name}: no executor for {type(op).__name__}")

    def _aggregate(self, name: str, op: Aggregate) -> Exec:
        if op.store is None:  # a combiner: its cache keeps partial states until a flush sends them on
            partials = PartialsCache(self.cache)
            combiner = AggregateExec(name, op, partials)
            partials.forward_to(combiner.forward_rows)
            return combiner
        if op.windows is None:
            table = self._kv_cache(op.store)
            kv_exec = AggregateExec(name, op, table)
            table.forward_to(kv_exec.forward_rows)
            return kv_exec
        if op.emit_final:
            ranges = self._window_cache(op.store, CachedWindowRanges)
            assert isinstance(ranges, CachedWindowRanges)
            emitter = WindowCloseEmitter(self._emit_intervals.windowed_aggregation_ms)
            return WindowCloseAggregateExec(name, op, op.windows, ranges, emitter, self.time.wall_clock)
        windows = self._window_cache(op.store)
        window_exec = WindowedAggregateExec(name, op, op.windows, windows)
        windows.forward_to(window_exec.forward_rows)
        return window_exec

    def _windowed(self, name: str, op: SessionAggregate | SlidingAggregate) -> Exec:
        """Session and sliding windowed aggregations; their caches forward updates, unless they emit
        on window close."""
        emitter = WindowCloseEmitter(self._emit_intervals.windowed_aggregation_ms) if op.emit_final else None
        definition = self._definitions[op.store]
        # Emitting on window close, their stores have no cache (as Kafka's): every write, and the
        # retention it moves, reaches the store at once.
        cache = TaskCache(0) if op.emit_final else self.cache
        if isinstance(op, SessionAggregate):
            sessions = CachedSessions(self._window_store(op.store), definition.key_serde,
                                      definition.stored_value_serde, cache)
            self._cached[op.store] = sessions
            session_exec = SessionAggregateExec(name, op, sessions, emitter, self.time.wall_clock)
            if emitter is None:
                sessions.forward_to(session_exec.forward_rows)
            return session_exec
        ranges = self._window_cache(op.store, CachedWindowRanges, cache)
        assert isinstance(ranges, CachedWindowRanges)
        sliding_exec = SlidingAggregateExec(name, op, ranges, emitter, self.time.wall_clock)
        if emitter is None:
            ranges.forward_to(sliding_exec.forward_rows)
        return sliding_exec

    def _stream_join(self, name: str, op: JoinWindowPut | StreamStreamJoin) -> Exec:
        if isinstance(op, JoinWindowPut):
            definition = self._definitions[op.store]
            return JoinWindowExec(name, self._window_store(op.store), definition.key_serde, definition.value_serde)
        tracker = self._join_trackers.setdefault(op.join_id, TimeTracker(self._emit_intervals.outer_join_ms))
        outer: KeyValueStore | None = None
        if op.outer_store is not None:
            store = self._stores[op.outer_store]
            assert isinstance(store, KeyValueStore)
            outer = store
        return StreamJoinExec(name, op, tracker, self._window_store(op.other_store), outer, self.time.wall_clock)

    def _window_store(self, name: str) -> WindowStore:
        store = self._stores[name]
        if not isinstance(store, WindowStore):
            raise TypeError(f"store {name} is not a window store")
        return store

    def _kv_cache(self, name: str) -> CachedKeyValue:
        """One cache per store per task, shared by every node that uses the store (the table's
        writer and its joins see the same latest values)."""
        cached = self._cached.get(name)
        if cached is None:
            store, definition = self._stores[name], self._definitions[name]
            if not isinstance(store, KeyValueStore):
                raise TypeError(f"store {name} is not a key-value store")
            cached = CachedKeyValue(store, definition.key_serde, definition.stored_value_serde, self.cache)
            self._cached[name] = cached
        assert isinstance(cached, CachedKeyValue)
        return cached

    def _window_cache(self, name: str, kind: type[CachedWindows] = CachedWindows,
                      cache: TaskCache | None = None) -> CachedWindows:
        definition = self._definitions[name]
        cached = kind(self._window_store(name), definition.key_serde, definition.stored_value_serde,
                      cache or self.cache)
        self._cached[name] = cached
        return cached

    def _typed_store(self, name: str) -> Any:
        store, definition = self._stores[name], self._definitions[name]
        if isinstance(store, WindowStore):
            return TypedWindowStore(store, definition.key_serde, definition.stored_value_serde)
        if isinstance(store, KeyValueStore):
            return TypedKeyValueStore(store, definition.key_serde, definition.stored_value_serde)
        raise TypeError(f"store {name}: unknown kind {type(store).__name__}")

    def _send_internal(self, out: SinkOutput) -> None:
        if out.keys:
            self._send(out.topic, out.records())

    def _send_output(self, out: SinkOutput) -> None:
        self._send_internal(out)
        if out.keys:
            self.output.append(out)

    # -- running -----------------------------------------------------------------------------
    def process(self, batch: Mapping[Any, Sequence[Message]]) -> None:
        """Process one batch: the records of each input partition, in offset order."""
        merged = merge_by_timestamp([records for records in batch.values() if records])
        if self._processors:  # the task's stream time drives their punctuations, nothing else
            self.time.start_chunk([ts[1] for ts in map(_timestamp_pair, merged)])
        position = 0
        for topic, run in itertools.groupby(merged, key=_topic):
            records = list(run)
            self._process_run(topic, records, position, merged)
            position += len(records)
        try:
            for processor in self._processors:
                processor.end_chunk()
        except UserCodeError as e:
            raise self._failure(e, merged) from e.cause

    def punctuate_wall_clock(self, now_ms: int) -> None:
        """Run the wall-clock punctuations due at `now_ms` (once per batch, before its flush)."""
        try:
            for processor in self._processors:
                processor.punctuate_wall_clock(now_ms)
        except UserCodeError as e:
            raise ProcessingFailed(self.task, "?", -1, -1, f"{e} (in a wall-clock punctuation)") from e.cause

    def _process_run(self, topic: str | None, run: list[Message], base: int, merged: list[Message]) -> None:
        source, source_exec = self._sources[topic or ""]
        keys = source.key_serde
        values = source.value_serde
        assert keys is not None and values is not None
        raw_keys, raw_values = list(map(_key, run)), list(map(_value, run))
        try:
            # Whole columns at a time, in the form the source's children take (Arrow for column
            # operations, Python values for user functions); the bytes are kept too, so a sink with
            # the same serde sends them as they came.
            if self._columnar_sources.get(source.name, False):
                key_column = Column(array=keys.to_arrow(raw_keys), raw=raw_keys, serde=keys)
                value_column = Column(array=values.to_arrow(raw_values), raw=raw_values, serde=values)
            else:
                key_column = Column(keys.deserialize_many(raw_keys), raw=raw_keys, serde=keys)
                value_column = Column(values.deserialize_many(raw_values), raw=raw_values, serde=values)
            chunk = Chunk(key_column, value_column, Column([ts[1] for ts in map(_timestamp_pair, run)]),
                          Column(list(range(base, base + len(run)))))
        except Exception:  # noqa: BLE001 - any serde failure: found and handled record by record
            chunk = Chunk.from_rows(self._deserialize_one_by_one(run, base, keys.deserialize, values.deserialize))
        try:
            source_exec.forward(chunk)
        except UserCodeError as e:
            raise self._failure(e, merged) from e.cause

    def _deserialize_one_by_one(self, run: list[Message], base: int, kd: Callable[[Any], Any],
                                vd: Callable[[Any], Any]) -> list[Rec]:
        records = []
        for i, m in enumerate(run):
            try:
                records.append((kd(m.key()), vd(m.value()), m.timestamp()[1], base + i))
            except Exception as e:  # noqa: BLE001 - a serde's own error type, whatever it is
                coordinates = (m.topic() or "?", m.partition() or 0, m.offset() or 0)
                if self._handler is DeserializationHandler.FAIL:
                    raise DeserializationFailed(self.task, *coordinates, f"cannot deserialize: {e}") from None
                log.warning("task %s: skipping record %s-%d@%d that cannot be deserialized "
                            "(default.deserialization.exception.handler=log_and_continue): %s",
                            self.task, *coordinates, e)
                self.skipped_deserialization += 1
        return records

    def _failure(self, error: UserCodeError, merged: list[Message]) -> ProcessingFailed:
        index = error.record[3]
        if 0 <= index < len(merged):
            m = merged[index]
            return ProcessingFailed(self.task, m.topic() or "?", m.partition() or 0, m.offset() or 0, str(error))
        first = merged[0]
        return ProcessingFailed(self.task, first.topic() or "?", first.partition() or 0, -1,
                                f"{error} (while flushing; the input record is not known)")

    def flush(self) -> None:
        """End of a batch: the caches write their dirty entries to the stores and forward them."""
        try:
            self.cache.flush()
        except UserCodeError as e:
            raise ProcessingFailed(self.task, "?", -1, -1, f"{e} (while flushing the record caches)") from e.cause

    def take_output(self) -> list[SinkOutput]:
        output, self.output = self.output, []
        return output

    def abort(self) -> None:
        """A failed batch: forget what the caches and the output rows hold, and the stream time the
        batch advanced (its records come again)."""
        self.cache.drop()
        self.output = []
        for node in self._execs.values():
            node.abort()
        self.set_stream_times(self._committed_stream_times)

    def stream_times(self) -> dict[str, int]:
        """Each stream-time-aware node's stream time (nodes that have seen no record left out), and
        the task's own under the name "" (no node has an empty name)."""
        times: dict[str, int] = {}
        for node in self._execs.values():
            times.update(node.saved_times())
        if self.time.stream_time_ms >= 0:
            times[TASK_STREAM_TIME] = self.time.stream_time_ms
        return times

    def set_stream_times(self, times: Mapping[str, int]) -> None:
        """Stream times as a batch record kept them: a task that moved or restarted goes on where it
        was (Kafka Streams commits partition time with the offsets for the same reason)."""
        for node in self._execs.values():
            node.restore_times(times)
        self.time.stream_time_ms = times.get(TASK_STREAM_TIME, -1)
        self._committed_stream_times = dict(times)

    def committed(self, stream_times: Mapping[str, int]) -> None:
        """The batch is durable: its stream times (as recorded with it) are what an abort goes back to."""
        self._committed_stream_times = dict(stream_times)

    def close(self) -> None:
        for exec_node in self._execs.values():
            exec_node.close()


def paths_meet(subtopology: Subtopology) -> bool:
    """Whether two paths of the subtopology come together again (a node with several parents, or
    two sinks writing one topic): there records must run depth-first, one at a time, to reach the
    meeting point in Kafka's order."""
    sink_topics = [node.topic for node in subtopology.sinks]
    return len(set(sink_topics)) < len(sink_topics) or any(len(node.parents) > 1 for node in subtopology.nodes)


_STATELESS: dict[type, Callable[[str, Any], Exec]] = {
    Filter: FilterExec, Map: MapExec, MapValues: MapValuesExec, SelectKey: SelectKeyExec, FlatMap: FlatMapExec,
    FlatMapValues: FlatMapValuesExec, Peek: PeekExec, Branch: BranchExec, Passthrough: PassthroughExec,
}


def _columnar_exec(op: Any) -> Callable[[str, Any], Exec] | None:
    """The column node for an operation given a column operation instead of a Python function."""
    if isinstance(op, Filter) and isinstance(op.predicate, pc.Expression):
        return FilterExpressionExec
    if isinstance(op, FlatMapValues) and isinstance(op.mapper, (Words, Split)):
        return ExplodeValuesExec
    if isinstance(op, (MapValues, SelectKey)) and isinstance(op.mapper, (Field, Value)):
        return FieldExec
    if isinstance(op, MapBatches):
        return MapBatchesExec
    return None


# The records are confluent_kafka Messages: their methods, mapped over a run, stay in C.
_topic, _key, _value, _timestamp_pair = Message.topic, Message.key, Message.value, Message.timestamp


def _timestamp(message: Message) -> int:
    return message.timestamp()[1]


def merge_by_timestamp(partitions: list[Sequence[Message]]) -> list[Message]:
    """One list in timestamp order, each partition's records kept in offset order (heapq.merge is
    stable: on equal timestamps the earlier partition goes first)."""
    if len(partitions) == 1:
        return list(partitions[0])
    return list(heapq.merge(*partitions, key=_timestamp))

