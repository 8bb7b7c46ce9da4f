"""Kafka Streams-compatible group protocol: task ids, host info, error codes, the versioned
subscription/assignment user data codecs, the version rules of leader and member, the version
each field appears in, the rebalance protocol and `upgrade.from`. Pure: no I/O."""

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
    MIN_CLIENT_TAGS_VERSION,
    MIN_ERROR_CODE_VERSION,
    MIN_HOST_INFO_VERSION,
    MIN_NAMED_TOPOLOGY_VERSION,
    MIN_NEXT_REBALANCE_VERSION,
    MIN_OFFSET_SUM_VERSION,
    MIN_STANDBY_PARTITIONS_BY_HOST_VERSION,
    MIN_SUBSCRIPTION_ERROR_CODE_VERSION,
    MIN_TOPIC_DICTIONARY_VERSION,
    MIN_UNIQUE_FIELD_VERSION,
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
from streams_rt.protocol.versions import (
    RoundVersions,
    SubscriptionVersions,
    VersionAction,
    VersionDecision,
    VersionMismatch,
    on_assignment_version,
)

__all__ = [
    "ACCEPTED_UPGRADE_FROM",
    "EARLIEST_PROBEABLE_VERSION",
    "LATEST_SUPPORTED_VERSION",
    "MIN_CLIENT_TAGS_VERSION",
    "MIN_ERROR_CODE_VERSION",
    "MIN_HOST_INFO_VERSION",
    "MIN_NAMED_TOPOLOGY_VERSION",
    "MIN_NEXT_REBALANCE_VERSION",
    "MIN_OFFSET_SUM_VERSION",
    "MIN_STANDBY_PARTITIONS_BY_HOST_VERSION",
    "MIN_SUBSCRIPTION_ERROR_CODE_VERSION",
    "MIN_TOPIC_DICTIONARY_VERSION",
    "MIN_UNIQUE_FIELD_VERSION",
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
    "RoundVersions",
    "SubscriptionInfo",
    "SubscriptionVersions",
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
