"""Where a key lives: the store's subtopology and the partition Kafka's default partitioner gives the
key's bytes (murmur2, bit for bit the Java client's), hence its task; and which hosts hold that task,
from the group's last assignment (the AssignmentInfo's partitions by host, as Kafka Streams'
StreamsMetadataState reads it). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streams_rt.kafka.partitioner import partition_for
from streams_rt.protocol import HostInfo, TaskId, TopicPartition
from streams_rt.topology import Topology, TopologyLayout
from streams_rt.topology.serdes import Serde

PartitionsByHost = Mapping[HostInfo, tuple[TopicPartition, ...]]


@dataclass(frozen=True)
class StoreInfo:
    """A queryable store: the user stores a topology declares (internal ones are not listed)."""

    name: str
    subtopology: int
    partitions: int  # its tasks: one per partition of the subtopology's source topics
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    window_size_ms: int | None
    sessions: bool = False  # a session store: windows are sessions, [start, end] per entry

    @property
    def windowed(self) -> bool:
        """Read by key and time (/windows): a window store or a session store."""
        return self.window_size_ms is not None

    @property
    def kind(self) -> str:
        return "session" if self.sessions else "window" if self.windowed else "key_value"

    def task_for(self, key: bytes) -> TaskId:
        return TaskId(self.subtopology, partition_for(key, self.partitions))

    def tasks(self) -> list[TaskId]:
        return [TaskId(self.subtopology, p) for p in range(self.partitions)]

    def task_named(self, text: str) -> TaskId | None:
        """The store's task written as `text` (`<subtopology>_<partition>`); None if it has no such task."""
        return next((t for t in self.tasks() if str(t) == text), None)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind,
                "key_serde": self.key_serde.name, "value_serde": self.value_serde.name,
                "subtopology": self.subtopology, "partitions": self.partitions,
                "window_size_ms": self.window_size_ms}


def store_catalog(topology: Topology, layout: TopologyLayout) -> dict[str, StoreInfo]:
    catalog = {}
    for sub in topology.subtopologies:
        for name in sub.stores:
            definition = topology.stores.get(name)
            if definition is None or not definition.queryable:
                continue
            catalog[name] = StoreInfo(name, sub.id, layout.partitions[sub.id], definition.key_serde,
                                      definition.stored_value_serde, definition.window_size_ms,
                                      definition.sessions)
    return dict(sorted(catalog.items()))


@dataclass(frozen=True)
class Owners:
    """The hosts holding a task: its active one (None while the group has none for it, as during a
    rebalance that moves it) and its standbys."""

    task: TaskId
    active: str | None
    standbys: tuple[str, ...]


class GroupView:
    """The group's task placement as one host's last assignment described it."""

    def __init__(self, layout: TopologyLayout, generation: int, active: PartitionsByHost,
                 standby: PartitionsByHost) -> None:
        self.generation = generation
        self._layout = layout
        self._active = _tasks_by_host(layout, active)
        self._standby = _tasks_by_host(layout, standby)

    def owners(self, task: TaskId) -> Owners:
        active = sorted(h for h, tasks in self._active.items() if task in tasks)
        standbys = tuple(sorted(h for h, tasks in self._standby.items() if task in tasks))
        return Owners(task, active[0] if active else None, standbys)

    def describe(self) -> dict[str, Any]:
        """`GET /v1/metadata`: every host, its tasks and source partitions, and the generation."""
        hosts = []
        for host in sorted(set(self._active) | set(self._standby)):
            active, standby = self._active.get(host, set()), self._standby.get(host, set())
            hosts.append({
                "endpoint": host,
                "active_tasks": [str(t) for t in sorted(active)],
                "standby_tasks": [str(t) for t in sorted(standby)],
                "active_partitions": _partitions(self._layout, active),
                "standby_partitions": _partitions(self._layout, standby),
            })
        return {"generation": self.generation, "hosts": hosts}


def _tasks_by_host(layout: TopologyLayout, by_host: PartitionsByHost) -> dict[str, set[TaskId]]:
    task_of = {tp: task for task in layout.tasks() for tp in layout.input_partitions(task)}
    found: dict[str, set[TaskId]] = {}
    for host, partitions in by_host.items():
        found[str(host)] = {task_of[tp] for tp in partitions if tp in task_of}
    return found


def _partitions(layout: TopologyLayout, tasks: set[TaskId]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition}
            for tp in sorted(tp for task in tasks for tp in layout.input_partitions(task))]
