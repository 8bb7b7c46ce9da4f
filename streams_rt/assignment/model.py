"""Inputs and outputs of the task assignor: plain frozen values, so that the coordinator can build
them from decoded subscriptions and the assignor stays pure."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from streams_rt.config import StreamsConfig, resolve
from streams_rt.config.registry import (
    ACCEPTABLE_RECOVERY_LAG,
    MAX_WARMUP_REPLICAS,
    NUM_STANDBY_REPLICAS,
    PROBING_REBALANCE_INTERVAL_MS,
    RACK_AWARE_ASSIGNMENT_TAGS,
)
from streams_rt.protocol import TaskId


def _positive(name: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


@dataclass(frozen=True)
class AssignmentConfigs:
    """The assignor's settings, with Kafka Streams' names and defaults.

    num_standby_replicas: `num.standby.replicas` (0)
    acceptable_recovery_lag: `acceptable.recovery.lag` (10000): a client within this many records of the
        changelog end counts as caught up and may take the active task without a warm-up.
    max_warmup_replicas: `max.warmup.replicas` (2): warm-up replicas in flight at once, group-wide.
    probing_rebalance_interval_ms: `probing.rebalance.interval.ms` (600000)
    rack_aware_assignment_tags: `rack.aware.assignment.tags`: client tag keys standbys are spread over.
    """

    num_standby_replicas: int = 0
    acceptable_recovery_lag: int = 10_000
    max_warmup_replicas: int = 2
    probing_rebalance_interval_ms: int = 600_000
    rack_aware_assignment_tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _positive("num.standby.replicas", self.num_standby_replicas)
        _positive("acceptable.recovery.lag", self.acceptable_recovery_lag)
        if self.max_warmup_replicas < 1:
            raise ValueError(f"max.warmup.replicas must be >= 1, got {self.max_warmup_replicas}")
        if self.probing_rebalance_interval_ms < 60_000:
            raise ValueError(
                f"probing.rebalance.interval.ms must be >= 60000, got {self.probing_rebalance_interval_ms}"
            )
        object.__setattr__(self, "rack_aware_assignment_tags", tuple(self.rack_aware_assignment_tags))

    @classmethod
    def from_config(cls, config: StreamsConfig) -> AssignmentConfigs:
        """The assignor's settings from a resolved configuration (the registry has checked them)."""
        return cls(
            num_standby_replicas=config.get(NUM_STANDBY_REPLICAS),
            acceptable_recovery_lag=config.get(ACCEPTABLE_RECOVERY_LAG),
            max_warmup_replicas=config.get(MAX_WARMUP_REPLICAS),
            probing_rebalance_interval_ms=config.get(PROBING_REBALANCE_INTERVAL_MS),
            rack_aware_assignment_tags=config.get(RACK_AWARE_ASSIGNMENT_TAGS),
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> AssignmentConfigs:
        """`from_config(resolve(props))`: raises ConfigError (one line, naming the key) or ConfigErrors."""
        return cls.from_config(resolve(props))


@dataclass(frozen=True)
class ClientState:
    """One process (Kafka Streams instance) as its subscription describes it.

    owned_active maps each task the client runs as active to the generation it was owned in (KIP-341);
    task_offset_sums are the changelog offset sums it holds (OFFSET_SUM_RUNNING_ACTIVE etc. allowed).
    revoked_all: an EAGER client gave everything up before joining; its owned_active still says what it
    ran (for stickiness, as Kafka's previous tasks) but it holds nothing (Kafka's empty owned
    partitions), so no hand-off waits for it. draining: the client is being drained (drain.py): it
    gets nothing new and keeps its actives only until their new owners are caught up."""

    process_id: uuid.UUID
    capacity: int = 1
    tags: Mapping[str, str] = field(default_factory=dict)
    owned_active: Mapping[TaskId, int] = field(default_factory=dict)
    owned_standby: frozenset[TaskId] = frozenset()
    task_offset_sums: Mapping[TaskId, int] = field(default_factory=dict)
    revoked_all: bool = False
    draining: bool = False

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"client {self.process_id}: capacity must be >= 1, got {self.capacity}")


@dataclass(frozen=True)
class ClientAssignment:
    """What one client runs after this round. `standby` includes the warm-ups; `revoke` lists active
    tasks the client owned and must give up now (cooperative), so another member can take them next round."""

    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()
    warmup: frozenset[TaskId] = frozenset()
    revoke: frozenset[TaskId] = frozenset()


@dataclass(frozen=True)
class AssignmentResult:
    """followup_rebalance: a task was withheld for revocation, rebalance as soon as members have revoked.
    probing_rebalance_at_ms: when to rebalance again to check warm-ups (None: nothing is warming up)."""

    clients: Mapping[uuid.UUID, ClientAssignment]
    followup_rebalance: bool
    probing_rebalance_at_ms: int | None


@dataclass(frozen=True)
class TaskTopology:
    """Subtopologies and their partition counts; co-partitioned subtopologies must agree on the count.

    partitions: subtopology id -> partition count. stateless: subtopologies without state stores (no
    changelog, so no standbys and no lag). copartition_groups: sets of subtopology ids read co-partitioned.
    """

    partitions: Mapping[int, int]
    copartition_groups: tuple[frozenset[int], ...] = ()
    stateless: frozenset[int] = frozenset()
    topology_name: str | None = None

    def __post_init__(self) -> None:
        for group in self.copartition_groups:
            missing = [s for s in group if s not in self.partitions]
            if missing:
                raise ValueError(f"co-partition group {sorted(group)} names unknown subtopologies {missing}")
            counts = {self.partitions[s] for s in group}
            if len(counts) > 1:
                detail = {s: self.partitions[s] for s in sorted(group)}
                raise ValueError(f"co-partitioned subtopologies disagree on partition count: {detail}")

    def tasks(self) -> Iterator[TaskId]:
        for sub, count in sorted(self.partitions.items()):
            for p in range(count):
                yield TaskId(sub, p, self.topology_name)

    def stateless_tasks(self) -> Iterator[TaskId]:
        for sub in sorted(self.stateless):
            for p in range(self.partitions.get(sub, 0)):
                yield TaskId(sub, p, self.topology_name)
