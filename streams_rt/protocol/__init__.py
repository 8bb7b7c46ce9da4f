"""Kafka Streams-compatible group protocol: task ids, host info, error codes and the versioned
subscription/assignment user data codecs. Pure: no I/O."""

from streams_rt.protocol.types import (
    EARLIEST_PROBEABLE_VERSION,
    LATEST_SUPPORTED_VERSION,
    OFFSET_SUM_OFFSET_UNKNOWN,
    OFFSET_SUM_RUNNING_ACTIVE,
    OFFSET_SUM_UNKNOWN,
    AssignorError,
    HostInfo,
    TaskId,
    TopicPartition,
)

__all__ = [
    "EARLIEST_PROBEABLE_VERSION",
    "LATEST_SUPPORTED_VERSION",
    "OFFSET_SUM_OFFSET_UNKNOWN",
    "OFFSET_SUM_RUNNING_ACTIVE",
    "OFFSET_SUM_UNKNOWN",
    "AssignorError",
    "HostInfo",
    "TaskId",
    "TopicPartition",
]
