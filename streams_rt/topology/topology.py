"""A built topology: its nodes, stores and subtopologies, split exactly as Kafka Streams splits
them, its description, and its layout once the partition counts of its source topics are known.

Subtopologies: nodes joined by an edge, or using the same store, belong together; a repartition
topic is the boundary (the sink writing it and the source reading it are in different
subtopologies). They are numbered in the order their first node was created. A task is a
subtopology on one partition; it reads that partition of each of the subtopology's source topics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.topology.errors import TopologyError
from streams_rt.topology.nodes import Node, ProcessorNode, SinkNode, SourceNode
from streams_rt.topology.stores import StoreDefinition


@dataclass(frozen=True)
class Subtopology:
    id: int
    nodes: tuple[Node, ...]  # parents before children

    @property
    def sources(self) -> list[SourceNode]:
        return [n for n in self.nodes if isinstance(n, SourceNode)]

    @property
    def sinks(self) -> list[SinkNode]:
        return [n for n in self.nodes if isinstance(n, SinkNode)]

    @property
    def stores(self) -> list[str]:
        seen: dict[str, None] = {}
        for node in self.nodes:
            if isinstance(node, ProcessorNode):
                seen.update(dict.fromkeys(node.stores))
        return list(seen)

    def source_topics(self, application_id: str) -> list[str]:
        """Every topic this subtopology reads, internal ones under their full names."""
        return [internal_name(application_id, t) if s.internal else t for s in self.sources for t in s.topics]


def internal_name(application_id: str, topic: str) -> str:
    """`<application.id>-<name>`: repartition topics belong to one application, as in Kafka."""
    return f"{application_id}-{topic}"


@dataclass(frozen=True)
class TopologyLayout:
    """The topology on a cluster: how many tasks each subtopology has, which partitions a task
    reads, and the internal topics to create. Built by `Topology.layout`."""

    application_id: str
    partitions: Mapping[int, int]  # subtopology -> task count
    inputs: Mapping[int, tuple[str, ...]]  # subtopology -> the topics its tasks read
    repartition_topics: Mapping[str, int]  # full name -> partition count
    changelog_topics: Mapping[str, int]  # full name -> partition count
    stateless: frozenset[int]
    copartition_groups: tuple[frozenset[int], ...]

    def tasks(self) -> list[TaskId]:
        return [TaskId(s, p) for s, count in sorted(self.partitions.items()) for p in range(count)]

    def input_partitions(self, task: TaskId) -> list[TopicPartition]:
        return [TopicPartition(topic, task.partition) for topic in self.inputs[task.subtopology]]


class Topology:
    """What `StreamsBuilder.build()` returns."""

    def __init__(self, nodes: Sequence[Node], stores: Mapping[str, StoreDefinition],
                 copartitioned: Sequence[frozenset[str]]) -> None:
        self.nodes = tuple(nodes)
        self.stores = dict(stores)
        self._copartitioned = tuple(copartitioned)  # node names whose sources must be co-partitioned
        self._check_stores()
        self.subtopologies = self._split()
        self._check_internal_topics()

    # -- structure -------------------------------------------------------------------------
    def _check_stores(self) -> None:
        for node in self.nodes:
            if isinstance(node, ProcessorNode):
                for store in node.stores:
                    if store not in self.stores:
                        raise TopologyError(node.name, f"uses unknown store {store!r}; known: {sorted(self.stores)}")

    def _split(self) -> tuple[Subtopology, ...]:
        index = {id(n): i for i, n in enumerate(self.nodes)}
        parent = list(range(len(self.nodes)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        def union(a: int, b: int) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)

        store_users: dict[str, int] = {}
        for i, node in enumerate(self.nodes):
            for child in node.children:
                union(i, index[id(child)])
            if isinstance(node, ProcessorNode):
                for store in node.stores:
                    if store in store_users:
                        union(i, store_users[store])
                    else:
                        store_users[store] = i
        groups: dict[int, list[Node]] = {}
        for i, node in enumerate(self.nodes):
            groups.setdefault(find(i), []).append(node)
        return tuple(Subtopology(sid, tuple(members)) for sid, (_, members) in enumerate(sorted(groups.items())))

    def _check_internal_topics(self) -> None:
        written = {s.topic for s in self.nodes if isinstance(s, SinkNode) and s.internal}
        for node in self.nodes:
            if isinstance(node, SourceNode) and node.internal:
                for topic in node.topics:
                    if topic not in written:
                        raise TopologyError(node.name, f"reads repartition topic {topic!r} that no sink writes")

    def subtopology_of(self, node_name: str) -> Subtopology:
        for sub in self.subtopologies:
            if any(n.name == node_name for n in sub.nodes):
                return sub
        raise KeyError(node_name)

    def external_source_topics(self) -> list[str]:
        seen: dict[str, None] = {}
        for node in self.nodes:
            if isinstance(node, SourceNode) and not node.internal:
                seen.update(dict.fromkeys(node.topics))
        return list(seen)

    def output_sinks(self) -> list[SinkNode]:
        """The sinks whose records are the topology's output (not repartition topics)."""
        return [n for n in self.nodes if isinstance(n, SinkNode) and not n.internal]

    # -- layout ----------------------------------------------------------------------------
    def layout(self, application_id: str, partitions: Mapping[str, int]) -> TopologyLayout:
        """Resolve against the cluster: `partitions` gives each external source topic's partition
        count. A missing topic, or co-partitioned sources that disagree, is a TopologyError naming
        the node. A repartition topic gets as many partitions as the most of its writers' inputs,
        as in Kafka."""
        for node in self.nodes:
            if isinstance(node, SourceNode) and not node.internal:
                missing = [t for t in node.topics if t not in partitions]
                if missing:
                    raise TopologyError(node.name, f"source topic(s) {missing} do not exist")
        counts: dict[str, int] = {t: partitions[t] for t in self.external_source_topics()}
        written_by = {s.topic: self.subtopology_of(s.name) for s in self.nodes
                      if isinstance(s, SinkNode) and s.internal}
        forced = self._copartitioned_counts(counts)
        for _ in range(len(self.subtopologies) + 1):  # repartition chains resolve upstream first
            for topic, writer in written_by.items():
                if topic in forced:
                    counts[topic] = forced[topic]
                    continue
                upstream = [counts.get(t) for s in writer.sources for t in s.topics]
                if all(c is not None for c in upstream):
                    counts[topic] = max(c for c in upstream if c is not None)
        unresolved = sorted(set(written_by) - set(counts))
        if unresolved:
            raise TopologyError(unresolved[0], "repartition topics form a cycle")
        task_counts: dict[int, int] = {}
        inputs: dict[int, tuple[str, ...]] = {}
        for sub in self.subtopologies:
            topics = [t for s in sub.sources for t in s.topics]
            task_counts[sub.id] = max(counts[t] for t in topics) if topics else 0
            inputs[sub.id] = tuple(sub.source_topics(application_id))
        for group in self._copartitioned:
            sources = [n for n in self.nodes if n.name in group]
            found = {t: counts[t] for n in sources if isinstance(n, SourceNode) for t in n.topics}
            if len(set(found.values())) > 1:
                raise TopologyError(sorted(group)[0], f"co-partitioned topics disagree on partition counts: {found}")
        changelogs: dict[str, int] = {}
        for sub in self.subtopologies:
            for store in sub.stores:
                changelogs[f"{application_id}-{store}-changelog"] = task_counts[sub.id]
        return TopologyLayout(
            application_id=application_id,
            partitions=task_counts,
            inputs=inputs,
            repartition_topics={internal_name(application_id, t): counts[t] for t in written_by},
            changelog_topics=changelogs,
            stateless=frozenset(s.id for s in self.subtopologies if not s.stores),
            copartition_groups=tuple(
                frozenset(self.subtopology_of(name).id for name in group) for group in self._copartitioned
            ),
        )

    def _copartitioned_counts(self, counts: Mapping[str, int]) -> dict[str, int]:
        """Internal topics co-partitioned with source topics get their partition count, as Kafka's
        CopartitionedTopicsEnforcer gives them (a foreign-key join's subscription topic has the
        right table's; its response topic the left table's)."""
        forced: dict[str, int] = {}
        for group in self._copartitioned:
            sources = [n for n in self.nodes if n.name in group and isinstance(n, SourceNode)]
            external = {counts[t] for n in sources if not n.internal for t in n.topics if t in counts}
            if len(external) == 1:
                count = external.pop()
                forced.update({t: count for n in sources if n.internal for t in n.topics})
        return forced

    # -- description -----------------------------------------------------------------------
    def describe(self) -> str:
        """Kafka's TopologyDescription text: per subtopology, each node, what it reads or writes,
        its stores, and its edges."""
        lines = ["Topologies:"]
        for sub in self.subtopologies:
            lines.append(f"   Sub-topology: {sub.id}")
            for node in sub.nodes:
                if isinstance(node, SourceNode):
                    lines.append(f"    Source: {node.name} (topics: [{', '.join(node.topics)}])")
                elif isinstance(node, SinkNode):
                    lines.append(f"    Sink: {node.name} (topic: {node.topic})")
                elif isinstance(node, ProcessorNode):
                    lines.append(f"    Processor: {node.name} (stores: [{', '.join(node.stores)}])")
                if not isinstance(node, SinkNode):
                    lines.append(f"      --> {', '.join(c.name for c in node.children) or 'none'}")
                if node.parents:
                    lines.append(f"      <-- {', '.join(p.name for p in node.parents)}")
            lines.append("")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()
