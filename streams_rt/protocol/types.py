"""Value types shared by every layer: the identity of a task, of a host and of a partition,
and the protocol constants that Kafka Streams defines for them."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

LATEST_SUPPORTED_VERSION = 11
# Version probing (KIP-268): from here on subscriptions carry the member's latest supported version
# and assignments the commonly supported one.
EARLIEST_PROBEABLE_VERSION = 3
UNKNOWN_VERSION = -1  # a version field that v1-2 user data does not carry (latest / commonly supported)

# The version each field appears in (Kafka's encoders write these as literals).
MIN_HOST_INFO_VERSION = 2  # subscriptions carry the user endpoint, assignments the partitions by host
MIN_ERROR_CODE_VERSION = 4  # assignments carry an error code (SHUTDOWN_REQUESTED, ASSIGNMENT_ERROR, ...)
MIN_TOPIC_DICTIONARY_VERSION = 5  # assignments write partitions by host through a topic dictionary
MIN_STANDBY_PARTITIONS_BY_HOST_VERSION = 6  # assignments carry standby partitions by host
MIN_OFFSET_SUM_VERSION = 7  # subscriptions carry task offset sums instead of active and standby task sets
MIN_NEXT_REBALANCE_VERSION = 7  # assignments carry the time of the next rebalance
MIN_UNIQUE_FIELD_VERSION = 8  # subscriptions carry the unique field
MIN_SUBSCRIPTION_ERROR_CODE_VERSION = 9  # subscriptions carry an error code
MIN_NAMED_TOPOLOGY_VERSION = 10  # both formats carry a task's topology name from this version on
MIN_CLIENT_TAGS_VERSION = 11  # subscriptions carry the client tags (rack-aware standbys)

# Task offset-sum sentinels carried in subscriptions (Kafka's Task.LATEST_OFFSET and friends).
OFFSET_SUM_RUNNING_ACTIVE = -2  # the client runs this task as active right now: lag 0 by definition
OFFSET_SUM_UNKNOWN = -3  # the client reported the task but no offsets are known
OFFSET_SUM_OFFSET_UNKNOWN = -4  # a changelog offset is unknown (e.g. EOS without a checkpoint)


class AssignorError(enum.IntEnum):
    """Error codes the group leader returns in AssignmentInfo (v4+); SubscriptionInfo carries one too (v9+)."""

    NONE = 0
    INCOMPLETE_SOURCE_TOPIC_METADATA = 1
    VERSION_PROBING = 2
    ASSIGNMENT_ERROR = 3
    SHUTDOWN_REQUESTED = 4


class TaskId(NamedTuple):
    """One task: a subtopology applied to one input partition, optionally within a named topology.

    A NamedTuple rather than a dataclass: task ids are dictionary keys on every hot path (codecs,
    assignor, task manager), and a tuple hashes and compares in C. Ordered as Kafka orders TaskId:
    unnamed before named, then topology name, subtopology, partition.
    """

    subtopology: int
    partition: int
    topology_name: str | None = None

    def _sort_key(self) -> tuple[int, str, int, int]:
        named = self.topology_name is not None
        return (1 if named else 0, self.topology_name or "", self.subtopology, self.partition)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, TaskId):
            return NotImplemented
        if self.topology_name is None and other.topology_name is None:  # the common case, in C
            return tuple.__lt__(self, other)
        return self._sort_key() < other._sort_key()

    def __le__(self, other: object) -> bool:
        if not isinstance(other, TaskId):
            return NotImplemented
        return self == other or self < other

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, TaskId):
            return NotImplemented
        return other < self

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, TaskId):
            return NotImplemented
        return self == other or other < self

    def __str__(self) -> str:
        """Kafka's textual form, also the state-directory name: `1_3` or `name__1_3`."""
        base = f"{self.subtopology}_{self.partition}"
        return f"{self.topology_name}__{base}" if self.topology_name is not None else base

    @classmethod
    def parse(cls, text: str) -> TaskId:
        """Inverse of `str()`; raises ValueError naming the text when it is not a task id."""
        name, sep, rest = text.rpartition("__")
        try:
            sub, part = rest.split("_")
            return cls(int(sub), int(part), name if sep else None)
        except ValueError:
            raise ValueError(f"not a task id: {text!r} (expected '<subtopology>_<partition>')") from None


@dataclass(frozen=True, slots=True, order=True)
class HostInfo:
    """The endpoint (host:port) a client serves interactive queries on."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class TopicPartition(NamedTuple):
    """A topic partition; a NamedTuple for the same reason as TaskId (hashed in bulk by the codecs)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
