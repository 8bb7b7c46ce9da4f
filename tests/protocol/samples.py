"""Valid encodings of every version, used as seeds by the bad-bytes and fuzz tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from streams_rt.protocol import (
    LATEST_SUPPORTED_VERSION,
    OFFSET_SUM_RUNNING_ACTIVE,
    AssignmentInfo,
    AssignorError,
    FutureSubscriptionInfo,
    HostInfo,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
)

VERSIONS = range(1, LATEST_SUPPORTED_VERSION + 1)

UserData = SubscriptionInfo | AssignmentInfo  # what a sample is
Decoder = Callable[[bytes], SubscriptionInfo | FutureSubscriptionInfo | AssignmentInfo]


def subscription(version: int) -> SubscriptionInfo:
    named = version >= 10
    return SubscriptionInfo.for_version(
        version,
        uuid.UUID(int=0x1234),
        user_endpoint="host-é:8080",
        task_offset_sums={
            TaskId(0, 1): OFFSET_SUM_RUNNING_ACTIVE,
            TaskId(1, 2, "topo" if named else None): 77,
            TaskId(1, 3): 5,
        },
        unique_field=3,
        error_code=AssignorError.SHUTDOWN_REQUESTED,
        client_tags={"zone": "eu-1", "rack": "r2"},
    )


def assignment(version: int) -> AssignmentInfo:
    named = version >= 10
    return AssignmentInfo.for_version(
        version,
        active_tasks=[TaskId(0, 1), TaskId(2, 0, "topo" if named else None)],
        standby_tasks={TaskId(1, 1): [TopicPartition("in", 1), TopicPartition("t\0é", 2)]},
        partitions_by_host={
            HostInfo("h1", 1): [TopicPartition("in", 1)],
            HostInfo("h2", 2): [TopicPartition("out", 0)],
        },
        standby_partitions_by_host={HostInfo("h3", 3): [TopicPartition("in", 1)]},
        error_code=AssignorError.VERSION_PROBING,
        next_rebalance_ms=123456,
    )
