"""TopologyTestDriver: run a topology in-process, with in-memory stores and in-memory topics, no broker
and no task host (as Kafka Streams' TopologyTestDriver). Records piped into an input topic land on the
partition Kafka's default partitioner picks; every task whose inputs have records then processes them
as one batch, repartition topics feed their downstream tasks, and the caches flush at the end of each
batch, exactly as in a host. Output topics and stores can be read back."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, Message

from streams_rt.kafka.partitioner import partition_for
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state.stores import InMemoryKeyValueStore, InMemoryWindowStore, KeyValueStore, StateStore
from streams_rt.state.stores.typed import TypedKeyValueStore, TypedWindowStore
from streams_rt.tasks.execution.runner import DeserializationHandler, SubtopologyRunner
from streams_rt.topology import Serde, Topology


@dataclass(frozen=True)
class OutputRecord:
    topic: str
    key: Any
    value: Any
    timestamp: int
    partition: int


class TopologyTestDriver:
    def __init__(
        self,
        topology: Topology,
        partitions: Mapping[str, int] | None = None,
        *,
        application_id: str = "test-app",
        cache_max_bytes: int = 0,
        deserialization_handler: DeserializationHandler = DeserializationHandler.FAIL,
        default_partitions: int = 1,
    ) -> None:
        """`partitions` gives source topics' partition counts (others: `default_partitions`).
        Caching is off by default, so every update is visible downstream, as Kafka's driver."""
        self.topology = topology
        counts = {t: (partitions or {}).get(t, default_partitions) for t in topology.external_source_topics()}
        self.layout = topology.layout(application_id, counts)
        self._partitions = {**counts, **self.layout.repartition_topics}
        self._pending: dict[TopicPartition, list[Message]] = defaultdict(list)
        self._offsets: dict[TopicPartition, int] = defaultdict(int)
        self.outputs: list[OutputRecord] = []
        self._stores: dict[TaskId, dict[str, StateStore]] = {}
        self._runners: dict[TaskId, SubtopologyRunner] = {}
        self._clock = 0
        for task in self.layout.tasks():
            sub = topology.subtopologies[task.subtopology]
            stores = {name: _memory_store(topology, name) for name in sub.stores}
            self._stores[task] = stores
            self._runners[task] = SubtopologyRunner(
                topology, sub, task, application_id, stores, self._send,
                cache_max_bytes=cache_max_bytes, deserialization_handler=deserialization_handler,
            )

    # -- input -----------------------------------------------------------------------------------
    def pipe(self, topic: str, key: Any, value: Any, timestamp: int | None = None,
             key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None) -> None:
        """Write one record to an input topic (serialized with the given serdes, else as bytes) and
        process until nothing is left to do."""
        kbytes = key_serde.serialize(key) if key_serde is not None else key
        vbytes = value_serde.serialize(value) if value_serde is not None else value
        self.pipe_raw(topic, kbytes, vbytes, timestamp)

    def pipe_raw(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int | None = None) -> None:
        if topic not in self._partitions:
            raise KeyError(f"{topic} is not a source topic of this topology")
        self._append(topic, key, value, self._clock if timestamp is None else timestamp)
        self.run()

    def _send(self, topic: str, records: list[tuple[bytes | None, bytes | None, int]]) -> None:
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
                    runner.flush()
                    runner.take_output()
                    for store in self._stores[task].values():
                        store.commit(None)

    # -- output ----------------------------------------------------------------------------------
    def read_output(self, topic: str, key_serde: Serde[Any] | None = None,
                    value_serde: Serde[Any] | None = None) -> list[tuple[Any, Any]]:
        """(key, value) of every record written to an output topic so far, in write order; read once."""
        found = [r for r in self.outputs if r.topic == topic]
        self.outputs = [r for r in self.outputs if r.topic != topic]
        return [(key_serde.deserialize(r.key) if key_serde else r.key,
                 value_serde.deserialize(r.value) if value_serde else r.value) for r in found]

    def key_value_store(self, name: str) -> dict[Any, Any]:
        """Every entry of a key-value store, across its tasks, deserialized."""
        merged: dict[Any, Any] = {}
        for store in self._stores_named(name):
            assert isinstance(store, KeyValueStore)
            definition = self.topology.stores[name]
            merged.update(TypedKeyValueStore(store, definition.key_serde, definition.value_serde).all())
        return merged

    def window_store(self, name: str, key: Any, time_from: int = 0, time_to: int = 2**62) -> list[tuple[int, Any]]:
        """(window start, value) of one key's windows, across the store's tasks."""
        definition = self.topology.stores[name]
        found = []
        for store in self._stores_named(name):
            assert isinstance(store, InMemoryWindowStore)
            typed = TypedWindowStore(store, definition.key_serde, definition.value_serde)
            found += typed.fetch(key, time_from, time_to)
        return sorted(found)

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
        store = InMemoryWindowStore(name, definition.retention_ms, definition.window_size_ms)
    else:
        store = InMemoryKeyValueStore(name)
    store.open()
    store.attach_changelog(lambda key, value: None)  # no broker: the changelog goes nowhere
    return store
