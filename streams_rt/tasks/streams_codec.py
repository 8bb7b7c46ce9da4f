"""The member's user data in Kafka Streams' format: its SubscriptionInfo out, its AssignmentInfo in."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType

from streams_rt.protocol import (
    LATEST_SUPPORTED_VERSION,
    OFFSET_SUM_RUNNING_ACTIVE,
    OFFSET_SUM_UNKNOWN,
    HostInfo,
    TaskId,
    TopicPartition,
)
from streams_rt.protocol.assignment import decode_assignment
from streams_rt.protocol.subscription import SubscriptionInfo
from streams_rt.tasks.membership import ReceivedAssignment


class StreamsMemberCodec:
    """`standby_offset_sums` reports the changelog offset sums of the non-active state this host
    holds (KIP-441 lags). A standby it returns no sum for holds nothing yet (a lag of the whole
    changelog), as Kafka's TaskManager leaves out a task with neither open stores nor a checkpoint:
    "unknown" would count as not caught up even where the changelog is short enough to restore at
    once. Without the callable, standbys are reported as unknown (a pre-KIP-441 member's report)."""

    def __init__(
        self,
        process_id: uuid.UUID,
        *,
        endpoint: HostInfo | None = None,
        client_tags: Mapping[str, str] | None = None,
        standby_offset_sums: Callable[[frozenset[TaskId]], Mapping[TaskId, int]] | None = None,
        latest_supported_version: int = LATEST_SUPPORTED_VERSION,
    ) -> None:
        self.process_id = process_id
        self.endpoint = endpoint
        self.client_tags = dict(client_tags or {})
        self._standby_sums = standby_offset_sums
        self.latest_supported_version = latest_supported_version
        # The group-wide maps of the last AssignmentInfo received (Kafka's StreamsMetadataState
        # reads the same): which host serves which source partitions, active and standby.
        self.partitions_by_host: Mapping[HostInfo, tuple[TopicPartition, ...]] = MappingProxyType({})
        self.standby_partitions_by_host: Mapping[HostInfo, tuple[TopicPartition, ...]] = MappingProxyType({})

    def encode_subscription(self, version: int, active: frozenset[TaskId], standby: frozenset[TaskId]) -> bytes:
        if self._standby_sums is None:
            sums: dict[TaskId, int] = {t: OFFSET_SUM_UNKNOWN for t in standby}
        else:
            sums = dict(self._standby_sums(standby))
        sums.update({t: OFFSET_SUM_RUNNING_ACTIVE for t in active})
        return SubscriptionInfo.for_version(
            version,
            self.process_id,
            latest_supported_version=self.latest_supported_version,
            user_endpoint=str(self.endpoint) if self.endpoint else None,
            task_offset_sums=sums,
            client_tags=self.client_tags,
        ).encode()

    def decode_assignment(self, data: bytes) -> ReceivedAssignment:
        info = decode_assignment(data)
        self.partitions_by_host = info.partitions_by_host
        self.standby_partitions_by_host = info.standby_partitions_by_host
        return ReceivedAssignment(
            version=info.version,
            commonly_supported_version=info.commonly_supported_version,
            active=frozenset(info.active_tasks),
            standby=frozenset(info.standby_tasks),
            error_code=int(info.error_code),
        )
