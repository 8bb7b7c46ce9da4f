"""The coordinator's view of Kafka Streams user data, behind a codec it is given.

The codec decides the coordinator's latest supported version, so a test can run an "older" or a
"future" coordinator (as Kafka's upgrade tests do with FutureStreamsPartitionAssignor) without the
product code knowing any version above its own."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from streams_rt.protocol import (
    LATEST_SUPPORTED_VERSION,
    NO_NEXT_REBALANCE,
    AssignmentWriter,
    AssignorError,
    FutureSubscriptionInfo,
    HostInfo,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
    decode_subscription,
)
from streams_rt.protocol.strings import MAX_UTF_BYTES, encode_mutf8
from streams_rt.rpc.errors import abbreviate

Partitions = tuple[TopicPartition, ...]


@dataclass(frozen=True)
class DecodedSubscription:
    """What a round needs of one subscription. `info` is None when the member used a version above
    the coordinator's latest: only the two version fields are readable then (version probing)."""

    version: int
    latest_supported_version: int  # -1 for v1-2, which do not carry it
    info: SubscriptionInfo | None


MAX_PORT = 65535
_PORT = re.compile(r"[0-9]{1,5}")


def parse_endpoint(text: str) -> HostInfo:
    """A user endpoint (Kafka Streams' application.server, `host:port`) as every AssignmentInfo
    writes it back: a host of at most 65535 bytes of modified UTF-8 (writeUTF) and a TCP port.
    Raises ValueError saying what does not fit, quoting at most a prefix."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"is not host:port: {abbreviate(text)}")
    if not _PORT.fullmatch(port) or not 1 <= int(port) <= MAX_PORT:
        raise ValueError(f"port {abbreviate(port)} is not a TCP port (1 to {MAX_PORT})")
    size = len(host) if len(host) > MAX_UTF_BYTES else len(encode_mutf8(host))
    if size > MAX_UTF_BYTES:
        raise ValueError(f"host is at least {size} bytes, above the {MAX_UTF_BYTES} an assignment can carry")
    return HostInfo(host, int(port))


@dataclass(frozen=True)
class RoundContent:
    """What every member's AssignmentInfo of one round carries alike: the group-wide partitions by
    host (what interactive queries route with), the error code and the next rebalance time."""

    partitions_by_host: Mapping[HostInfo, Partitions] = field(default_factory=dict)
    standby_partitions_by_host: Mapping[HostInfo, Partitions] = field(default_factory=dict)
    error_code: AssignorError = AssignorError.NONE
    next_rebalance_ms: int = NO_NEXT_REBALANCE


@dataclass(frozen=True)
class AssignmentContent:
    """One member's own AssignmentInfo fields, independent of the version they are encoded at."""

    active_tasks: tuple[TaskId, ...] = ()
    standby_tasks: Mapping[TaskId, Partitions] = field(default_factory=dict)


# Writes one member's assignment of a round; raises (ValueError, say) for content it cannot write.
MemberWriter = Callable[[AssignmentContent], bytes]


class UserDataCodec(Protocol):
    """Reads subscriptions and writes assignments up to `latest_supported_version`."""

    latest_supported_version: int

    def decode_subscription(self, data: bytes) -> DecodedSubscription: ...

    def assignment_writer(self, version: int, commonly_supported: int, shared: RoundContent) -> MemberWriter:
        """The writer of every member's assignment of one round: what they share is encoded once."""
        ...


class StreamsUserDataCodec:
    """Kafka Streams' byte formats (streams_rt.protocol), capped at `latest_supported_version`:
    a coordinator built with a lower latest version treats newer subscriptions as unreadable, as an
    older leader would."""

    def __init__(self, latest_supported_version: int = LATEST_SUPPORTED_VERSION) -> None:
        if not 1 <= latest_supported_version <= LATEST_SUPPORTED_VERSION:
            raise ValueError(f"latest supported version must be in [1, {LATEST_SUPPORTED_VERSION}]")
        self.latest_supported_version = latest_supported_version

    def decode_subscription(self, data: bytes) -> DecodedSubscription:
        """Raises streams_rt.protocol.MalformedUserData for bytes no version accepts."""
        s = decode_subscription(data)
        if isinstance(s, FutureSubscriptionInfo) or s.version > self.latest_supported_version:
            return DecodedSubscription(s.version, s.latest_supported_version, None)
        return DecodedSubscription(s.version, s.latest_supported_version, s)

    def assignment_writer(
        self, version: int, commonly_supported: int, shared: RoundContent = RoundContent()
    ) -> MemberWriter:
        """Raises ValueError when `version` is above this codec's latest or cannot carry `shared`."""
        if version > self.latest_supported_version:
            raise ValueError(f"cannot write assignment version {version} (latest {self.latest_supported_version})")
        writer = AssignmentWriter(
            version,
            commonly_supported_version=commonly_supported,
            partitions_by_host=shared.partitions_by_host,
            standby_partitions_by_host=shared.standby_partitions_by_host,
            error_code=shared.error_code,
            next_rebalance_ms=shared.next_rebalance_ms,
        )
        return lambda content: writer.encode(content.active_tasks, content.standby_tasks)

    def encode_assignment(
        self, version: int, commonly_supported: int, content: AssignmentContent, shared: RoundContent = RoundContent()
    ) -> bytes:
        """One assignment on its own (a round writes its members' through one `assignment_writer`)."""
        return self.assignment_writer(version, commonly_supported, shared)(content)
