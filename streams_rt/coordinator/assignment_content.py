"""Turns planned ClientAssignments into what each member's AssignmentInfo says: its active task
list, its standby tasks with their partitions, and the group-wide partitions by host (the
metadata interactive queries route with), all derived from the source topics of each subtopology."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from streams_rt.assignment import ClientAssignment
from streams_rt.coordinator.user_data import AssignmentContent, Partitions, RoundContent
from streams_rt.protocol import NO_NEXT_REBALANCE, HostInfo, TaskId, TopicPartition


class SourceTopics:
    """Task (s, p) reads partition p of every source topic of subtopology s, as in Kafka Streams'
    default partition grouper. Subtopologies without topics give tasks without partitions."""

    def __init__(self, topics_by_subtopology: Mapping[int, Sequence[str]] | None = None) -> None:
        self._topics = MappingProxyType({s: tuple(ts) for s, ts in (topics_by_subtopology or {}).items()})

    def partitions(self, task: TaskId) -> Partitions:
        return tuple(TopicPartition(topic, task.partition) for topic in self._topics.get(task.subtopology, ()))

    def of(self, tasks: frozenset[TaskId]) -> Partitions:
        return tuple(sorted(tp for t in tasks for tp in self.partitions(t)))


def _active_list(active: frozenset[TaskId], topics: SourceTopics) -> tuple[TaskId, ...]:
    """Kafka's list: one entry per assigned partition in partition order (a task repeats once per
    source topic); tasks without known partitions follow in TaskId order."""
    by_partition = sorted((tp, t) for t in active for tp in topics.partitions(t))
    bare = sorted(t for t in active if not topics.partitions(t))
    return tuple(t for _, t in by_partition) + tuple(bare)


def build_contents(
    planned: Mapping[str, ClientAssignment],
    endpoints: Mapping[str, HostInfo | None],
    topics: SourceTopics,
    next_rebalance_ms: int = NO_NEXT_REBALANCE,
) -> tuple[RoundContent, dict[str, AssignmentContent]]:
    """What every member's assignment shares (the by-host maps cover every member with an
    endpoint), and each member's own content."""
    active_by_host: dict[HostInfo, set[TaskId]] = {}
    standby_by_host: dict[HostInfo, set[TaskId]] = {}
    for mid, a in planned.items():
        host = endpoints.get(mid)
        if host is not None:
            active_by_host.setdefault(host, set()).update(a.active)
            standby_by_host.setdefault(host, set()).update(a.standby)
    shared = RoundContent(
        partitions_by_host={h: topics.of(frozenset(ts)) for h, ts in sorted(active_by_host.items())},
        standby_partitions_by_host={h: topics.of(frozenset(ts)) for h, ts in sorted(standby_by_host.items())},
        next_rebalance_ms=next_rebalance_ms,
    )
    own = {
        mid: AssignmentContent(
            active_tasks=_active_list(a.active, topics),
            standby_tasks={t: topics.partitions(t) for t in sorted(a.standby)},
        )
        for mid, a in planned.items()
    }
    return shared, own
