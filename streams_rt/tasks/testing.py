"""TopologyTestDriver: run a topology in-process, with in-memory stores and in-memory topics, no broker
and no task host (as Kafka Streams' TopologyTestDriver). Records piped into an input topic land on the
partition Kafka's default partitioner picks; every task whose inputs have records then processes them
as one batch, repartition topics feed their downstream tasks, and the caches flush at the end of each
batch, exactly as in a host. Output topics and stores can be read back.

    driver = TopologyTestDriver(topology)
    driver.pipe("text-lines", "l1", "hello world hello")      # the source's serdes write it
    driver.read_output("word-counts")                          # [("hello", 1), ("world", 1), ("hello", 2)]
    driver.key_value_store("counts")                           # {"hello": 2, "world": 1}

Keys and values go in and come out through the serdes the topology declares for the topic (its
source's for `pipe`, the sink's for `read_output`); pass serdes to override, or use `pipe_raw` and
`read_output_records(..., raw=True)` for bytes. tests/kstreams_oracle holds this driver's results equal
to Kafka Streams' own TopologyTestDriver's on the reference topologies."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, Message

from streams_rt.kafka.partitioner import partition_for
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state.stores import InMemoryKeyValueStore, InMemoryWindowStore, KeyValueStore, StateStore
from streams_rt.state.stores.typed import TypedKeyValueStore, TypedWindowStore
from streams_rt.tasks.execution.emit import KAFKA_EMIT_INTERVALS, EmitIntervals
from streams_rt.tasks.execution.runner import DeserializationHandler, SubtopologyRunner
from streams_rt.tasks.execution.suppress import buffer_summary
from streams_rt.topology import Serde, Topology
from streams_rt.topology.joins import LeftOrRightListSerde, OuterJoinKeySerde
from streams_rt.topology.nodes import SinkNode, SourceNode
from streams_rt.topology.serdes import TimestampedSerde
from streams_rt.topology.suppress import SuppressBufferSerde


@dataclass(frozen=True)
class OutputRecord:
    topic: str
    key: Any
    value: Any
    timestamp: int
    partition: int


class TopologyTestDriver:
    """A topology run in-process on in-memory topics and stores (see the module docstring)."""

    def __init__(
        self,
        topology: Topology,
        partitions: Mapping[str, int] | None = None,
        *,
        application_id: str = "test-app",
        cache_max_bytes: int = 0,
        deserialization_handler: DeserializationHandler = DeserializationHandler.FAIL,
        default_partitions: int = 1,
        columnar: bool = True,
        emit_intervals: EmitIntervals = KAFKA_EMIT_INTERVALS,
    ) -> None:
        """`partitions` gives source topics' partition counts (others: `default_partitions`).
        Caching is off by default, so every update is visible downstream, as Kafka's driver.
        `emit_intervals`: the wall-clock throttles of operators that wait for windows to close
        (execution/emit.py; Kafka's defaults, 1 s of the driver's clock)."""
        self.topology = topology
        counts = {t: (partitions or {}).get(t, default_partitions) for t in topology.external_source_topics()}
        self.layout = topology.layout(application_id, counts)
        self._partitions = {**counts, **self.layout.repartition_topics}
        self._pending: dict[TopicPartition, list[Message]] = defaultdict(list)
        self._offsets: dict[TopicPartition, int] = defaultdict(int)
        self.outputs: list[OutputRecord] = []
        self._stores: dict[TaskId, dict[str, StateStore]] = {}
        self._runners: dict[TaskId, SubtopologyRunner] = {}
        self._clock = 0  # the largest timestamp piped: what a record piped without one gets
        self.wall_clock_ms = 0  # moved only by advance_wall_clock_time, as Kafka's mocked time
        for task in self.layout.tasks():
            sub = topology.subtopologies[task.subtopology]
            stores = {name: _memory_store(topology, name) for name in sub.stores}
            self._stores[task] = stores
            self._runners[task] = SubtopologyRunner(
                topology, sub, task, application_id, stores, self._send,
                cache_max_bytes=cache_max_bytes, deserialization_handler=deserialization_handler,
                wall_clock=lambda: self.wall_clock_ms, columnar=columnar, emit_intervals=emit_intervals,
            )

    # -- input -----------------------------------------------------------------------------------
    def pipe(self, topic: str, key: Any, value: Any, timestamp: int | None = None,
             key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None) -> None:
        """Write one record to an input topic, serialized with the given serdes or else those of the
        topic's source, and process until nothing is left to do. Without a timestamp the record
        gets the largest timestamp piped so far."""
        source = self._source_of(topic)
        keys, values = key_serde or source.key_serde, value_serde or source.value_serde
        assert keys is not None and values is not None  # the DSL always sets a source's serdes
        self.pipe_raw(topic, keys.serialize(key), values.serialize(value), timestamp)

    def pipe_raw(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int | None = None) -> None:
        """`pipe` for bytes as they would sit in the topic."""
        self._source_of(topic)
        self._append(topic, key, value, self._clock if timestamp is None else timestamp)
        self.run()

    def pipe_batch(self, topic: str, records: Iterable[tuple[Any, Any, int]]) -> None:
        """Write several records (key, value, timestamp) to an input topic, with its source's serdes,
        and process them as one batch, as a host runs a micro-batch (caches flush once, at its end)."""
        source = self._source_of(topic)
        keys, values = source.key_serde, source.value_serde
        assert keys is not None and values is not None
        for key, value, timestamp in records:
            self._append(topic, keys.serialize(key), values.serialize(value), timestamp)
        self.run()

    def _source_of(self, topic: str) -> SourceNode:
        for node in self.topology.nodes:
            if isinstance(node, SourceNode) and not node.internal and topic in node.topics:
                return node
        raise KeyError(f"{topic!r} is not a source topic of this topology; "
                       f"its sources read {self.topology.external_source_topics()}")

    def advance_wall_clock_time(self, milliseconds: int) -> None:
        """Move the driver's wall clock on (Kafka's advanceWallClockTime): due wall-clock
        punctuations run, then whatever they wrote is processed."""
        if milliseconds < 0:
            raise ValueError(f"the wall clock only moves forward, got {milliseconds} ms")
        self.wall_clock_ms += milliseconds
        for task, runner in self._runners.items():
            runner.punctuate_wall_clock(self.wall_clock_ms)
            self._finish_batch(task, runner)
        self.run()

    def _send(self, topic: str, records: Iterable[tuple[bytes | None, bytes | None, int]]) -> None:
        for key, value, timestamp in records:
            self._append(topic, key, value, timestamp)

    def _append(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int) -> None:
        count = self._partitions.get(topic, 1)
        partition = partition_for(key, count) if key is not None else 0
        tp = TopicPartition(topic, partition)
        offset = self._offsets[tp]
        self._offsets[tp] += 1
        self._clock = max(self._clock, timestamp)
        message = Message(topic=topic, partition=partition, offset=offset, key=key, value=value,
                          timestamp=(TIMESTAMP_CREATE_TIME, timestamp))
        if topic in self._partitions:
            self._pending[tp].append(message)
        else:
            self.outputs.append(OutputRecord(topic, key, value, timestamp, partition))

    def run(self) -> None:
        """Process batches until no task has input left."""
        while self._pending:
            pending, self._pending = self._pending, defaultdict(list)
            for task, runner in self._runners.items():
                batch = {tp: records for tp in self.layout.input_partitions(task) if (records := pending.get(tp))}
                if batch:
                    runner.process(batch)
                    self._finish_batch(task, runner)

    def _finish_batch(self, task: TaskId, runner: SubtopologyRunner) -> None:
        runner.flush()
        runner.take_output()
        for store in self._stores[task].values():
            store.commit(None)

    # -- output ----------------------------------------------------------------------------------
    def read_output(self, topic: str, key_serde: Serde[Any] | None = None,
                    value_serde: Serde[Any] | None = None) -> list[tuple[Any, Any]]:
        """(key, value) of every record written to an output topic so far, in write order, read with
        the given serdes or else the sink's; each record is read once."""
        return [(r.key, r.value) for r in self.read_output_records(topic, key_serde, value_serde)]

    def read_output_records(self, topic: str, key_serde: Serde[Any] | None = None,
                            value_serde: Serde[Any] | None = None, raw: bool = False) -> list[OutputRecord]:
        """Like `read_output`, with each record's timestamp and partition; `raw`: keys and values
        as the bytes in the topic."""
        found = [r for r in self.outputs if r.topic == topic]
        self.outputs = [r for r in self.outputs if r.topic != topic]
        if raw:
            return found
        sink = self._sink_of(topic)
        keys, values = key_serde or sink.key_serde, value_serde or sink.value_serde
        assert keys is not None and values is not None  # the DSL always sets a sink's serdes
        return [OutputRecord(r.topic, keys.deserialize(r.key), values.deserialize(r.value), r.timestamp, r.partition)
                for r in found]

    def _sink_of(self, topic: str) -> SinkNode:
        for sink in self.topology.output_sinks():
            if sink.topic == topic:
                return sink
        raise KeyError(f"{topic!r} is not an output topic of this topology; its sinks write "
                       f"{sorted({s.topic for s in self.topology.output_sinks()})}")

    def key_value_store(self, name: str) -> dict[Any, Any]:
        """Every entry of a key-value store, across its tasks, deserialized."""
        merged: dict[Any, Any] = {}
        for store in self._stores_named(name):
            assert isinstance(store, KeyValueStore)
            definition = self.topology.stores[name]
            merged.update(TypedKeyValueStore(store, definition.key_serde, definition.stored_value_serde).all())
        return merged

    def window_store(self, name: str, key: Any, time_from: int = 0, time_to: int = 2**62) -> list[tuple[int, Any]]:
        """(window start, value) of one key's windows, across the store's tasks."""
        definition = self.topology.stores[name]
        found = []
        for store in self._stores_named(name):
            assert isinstance(store, InMemoryWindowStore)
            typed = TypedWindowStore(store, definition.key_serde, definition.stored_value_serde)
            found += typed.fetch(key, time_from, time_to)
        return sorted(found)

    def store_rows(self, name: str) -> list[tuple[Any, ...]]:
        """Every entry of a store across its tasks, deserialized: (key, value, timestamp) of a
        key-value store, (key, window start, window end, value, timestamp) of a window store (one
        per record for a join's), (key, session start, session end, value, None) of a session store,
        (key, "left" or "right", value, timestamp) per record a left/outer join holds, ("records", n)
        and ("min_time", t) of a suppress buffer holding n updates. The timestamp
        is None where the store keeps none (a processor's plain key-value store)."""
        definition = self.topology.stores[name]
        keys, stored = definition.key_serde, definition.stored_value_serde

        def value_and_time(data: bytes) -> tuple[Any, int | None]:
            if isinstance(stored, TimestampedSerde):
                found = stored.deserialize_timestamped(data)
                assert found is not None
                return found
            return stored.deserialize(data), None

        rows: list[tuple[Any, ...]] = []
        for store in self._stores_named(name):
            if isinstance(keys, SuppressBufferSerde):
                assert isinstance(store, KeyValueStore)
                rows += buffer_summary(store)
            elif isinstance(keys, OuterJoinKeySerde):
                assert isinstance(store, KeyValueStore) and isinstance(stored, LeftOrRightListSerde)
                for key, value in store.all():
                    held = keys.deserialize(key)
                    assert held is not None
                    rows += [(held[2], "left" if is_left else "right", v, held[0])
                             for is_left, v in stored.deserialize(value) or []]
            elif definition.sessions:
                assert isinstance(store, InMemoryWindowStore)
                rows += [(keys.deserialize(key), int.from_bytes(start, "big"), end, *value_and_time(value))
                         for key, end, start, value in store.fetch_all_entries()]
            elif isinstance(store, InMemoryWindowStore):
                size = definition.window_size_ms
                assert size is not None
                rows += [(keys.deserialize(key), start, start + size, *value_and_time(value))
                         for key, start, value in store.fetch_all()]
            else:
                assert isinstance(store, KeyValueStore)
                rows += [(keys.deserialize(key), *value_and_time(value)) for key, value in store.all()]
        return rows

    def _stores_named(self, name: str) -> Iterator[StateStore]:
        if name not in self.topology.stores:
            raise KeyError(f"no store {name!r}; the topology has {sorted(self.topology.stores)}")
        for stores in self._stores.values():
            if name in stores:
                yield stores[name]

    def close(self) -> None:
        for runner in self._runners.values():
            runner.close()


def _memory_store(topology: Topology, name: str) -> StateStore:
    definition = topology.stores[name]
    store: StateStore
    if definition.windowed:
        assert definition.window_size_ms is not None and definition.retention_ms is not None
        store = InMemoryWindowStore(name, definition.retention_ms, definition.window_size_ms,
                                    retain_duplicates=definition.retain_duplicates, sessions=definition.sessions)
    else:
        store = InMemoryKeyValueStore(name)
    store.open()
    store.attach_changelog(lambda key, value: None)  # no broker: the changelog goes nowhere
    return store
