"""An application's internal topics, made before its hosts start: repartition topics (kept until
read: no time retention), and one compacted changelog per store, including each subtopology's batch
store. Counts come from the topology's layout; an existing topic with another count is an error, as
in Kafka's InternalTopicManager."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.tasks.batch_record import store_name
from streams_rt.topology import Topology, TopologyLayout

log = logging.getLogger(__name__)

WINDOW_CHANGELOG_EXTRA_RETENTION_MS = 24 * 3600 * 1000


class InternalTopicError(RuntimeError):
    pass


def changelog_topics(topology: Topology, layout: TopologyLayout) -> dict[str, tuple[int, dict[str, str]]]:
    """Every changelog topic: name -> (partitions, configs)."""
    out: dict[str, tuple[int, dict[str, str]]] = {}
    for sub in topology.subtopologies:
        count = layout.partitions[sub.id]
        for name in [*sub.stores, store_name(sub.id)]:
            definition = topology.stores.get(name)
            configs = {"cleanup.policy": "compact"}
            if definition is not None and definition.retention_ms is not None:
                configs = {"cleanup.policy": "compact,delete",
                           "retention.ms": str(definition.retention_ms + WINDOW_CHANGELOG_EXTRA_RETENTION_MS)}
            out[f"{layout.application_id}-{name}-changelog"] = (count, configs)
    return out


def task_changelogs(topology: Topology, layout: TopologyLayout) -> dict[TaskId, list[TopicPartition]]:
    """Each stateful task's changelog partitions (a subtopology without stores of its own counts as
    stateless for assignment: its batch store is small and restores anywhere)."""
    out: dict[TaskId, list[TopicPartition]] = {}
    for sub in topology.subtopologies:
        if not sub.stores:
            continue
        for p in range(layout.partitions[sub.id]):
            out[TaskId(sub.id, p)] = [TopicPartition(f"{layout.application_id}-{name}-changelog", p)
                                      for name in [*sub.stores, store_name(sub.id)]]
    return out


def ensure_internal_topics(admin: AdminClient, topology: Topology, layout: TopologyLayout,
                           replication_factor: int = 1, timeout_s: float = 30.0) -> None:
    wanted: dict[str, tuple[int, dict[str, str]]] = {
        name: (count, {"cleanup.policy": "delete", "retention.ms": "-1"})
        for name, count in layout.repartition_topics.items()
    }
    wanted.update(changelog_topics(topology, layout))
    existing = admin.list_topics(timeout=timeout_s).topics
    new = []
    for name, (count, configs) in wanted.items():
        if name in existing:
            found = len(existing[name].partitions)
            if found != count:
                raise InternalTopicError(f"internal topic {name} has {found} partitions, the topology needs {count}")
            continue
        new.append(NewTopic(name, count, replication_factor, config=configs))
    for topic, future in admin.create_topics(new, request_timeout=timeout_s).items() if new else []:
        try:
            future.result()
            log.info("created internal topic %s", topic)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise InternalTopicError(f"internal topic {topic} cannot be created: {exc}") from exc


def check_output_topics(admin: AdminClient, topology: Topology, timeout_s: float = 30.0) -> None:
    """Output topics must exist before the first batch writes to them (as in Kafka Streams, which
    does not create them); say so now rather than at the first produce."""
    existing = admin.list_topics(timeout=timeout_s).topics
    missing = sorted({s.topic for s in topology.output_sinks()} - set(existing))
    if missing:
        raise InternalTopicError(f"output topic(s) {missing} do not exist: create them before starting")


def source_partitions(admin: AdminClient, topology: Topology, timeout_s: float = 30.0) -> dict[str, int]:
    """The partition counts of the topology's existing source topics (a missing one is left out:
    the layout then names it)."""
    topics = admin.list_topics(timeout=timeout_s).topics
    return {t: len(topics[t].partitions) for t in topology.external_source_topics() if t in topics}


def sum_by_task(offsets: Mapping[TopicPartition, int],
                changelogs: Mapping[TaskId, list[TopicPartition]]) -> dict[TaskId, int]:
    return {task: sum(offsets.get(tp, 0) for tp in tps) for task, tps in changelogs.items()}
