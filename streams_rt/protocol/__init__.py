"""Kafka Streams-compatible group protocol: task ids, host info, error codes, the versioned
subscription/assignment user data codecs, the member-side version rules and `upgrade.from`.
Pure: no I/O."""

from streams_rt.protocol.assignment import NO_NEXT_REBALANCE, AssignmentInfo, decode_assignment
from streams_rt.protocol.errors import MalformedUserData
from streams_rt.protocol.subscription import (
    FutureSubscriptionInfo,
    SubscriptionInfo,
    decode_subscription,
)
from streams_rt.protocol.types import (
    EARLIEST_PROBEABLE_VERSION,
    LATEST_SUPPORTED_VERSION,
    OFFSET_SUM_OFFSET_UNKNOWN,
    OFFSET_SUM_RUNNING_ACTIVE,
    OFFSET_SUM_UNKNOWN,
    UNKNOWN_VERSION,
    AssignorError,
    HostInfo,
    TaskId,
    TopicPartition,
)
from streams_rt.protocol.upgrade import (
    ACCEPTED_UPGRADE_FROM,
    RebalanceProtocol,
    UpgradeFromError,
    UpgradeMode,
    parse_upgrade_from,
)
from streams_rt.protocol.versions import VersionAction, VersionDecision, VersionMismatch, on_assignment_version

__all__ = [
    "ACCEPTED_UPGRADE_FROM",
    "EARLIEST_PROBEABLE_VERSION",
    "LATEST_SUPPORTED_VERSION",
    "NO_NEXT_REBALANCE",
    "OFFSET_SUM_OFFSET_UNKNOWN",
    "OFFSET_SUM_RUNNING_ACTIVE",
    "OFFSET_SUM_UNKNOWN",
    "UNKNOWN_VERSION",
    "AssignmentInfo",
    "AssignorError",
    "FutureSubscriptionInfo",
    "HostInfo",
    "MalformedUserData",
    "RebalanceProtocol",
    "SubscriptionInfo",
    "TaskId",
    "TopicPartition",
    "UpgradeFromError",
    "UpgradeMode",
    "VersionAction",
    "VersionDecision",
    "VersionMismatch",
    "decode_assignment",
    "decode_subscription",
    "on_assignment_version",
    "parse_upgrade_from",
]
