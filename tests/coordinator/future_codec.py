"""Test-only version 12 of the user data, as Kafka's upgrade tests build it (StreamsUpgradeTest's
FutureStreamsPartitionAssignor, FutureSubscriptionInfo, FutureAssignmentInfo): a version 12 header
over the version 11 layout. The product code never knows a version above its own; these codecs are
injected into a "future" host and a "future" coordinator."""

from __future__ import annotations

import dataclasses

from streams_rt.coordinator.user_data import DecodedSubscription, MemberWriter, RoundContent, StreamsUserDataCodec
from streams_rt.protocol import LATEST_SUPPORTED_VERSION, TaskId
from streams_rt.tasks.membership import ReceivedAssignment
from streams_rt.tasks.streams_codec import StreamsMemberCodec

FUTURE_VERSION = LATEST_SUPPORTED_VERSION + 1


def _version(data: bytes) -> int:
    return int.from_bytes(data[:4], "big", signed=True) if len(data) >= 4 else -1


def _relabel(data: bytes, version: int) -> bytes:
    return version.to_bytes(4, "big") + data[4:]


class FutureCoordinatorCodec:
    """A coordinator whose latest supported version is 12."""

    latest_supported_version = FUTURE_VERSION

    def __init__(self) -> None:
        self._current = StreamsUserDataCodec()

    def decode_subscription(self, data: bytes) -> DecodedSubscription:
        if _version(data) != FUTURE_VERSION:
            return self._current.decode_subscription(data)
        d = self._current.decode_subscription(_relabel(data, LATEST_SUPPORTED_VERSION))
        return DecodedSubscription(FUTURE_VERSION, d.latest_supported_version, d.info)

    def assignment_writer(self, version: int, commonly_supported: int, shared: RoundContent) -> MemberWriter:
        if version != FUTURE_VERSION:
            return self._current.assignment_writer(version, commonly_supported, shared)
        write = self._current.assignment_writer(LATEST_SUPPORTED_VERSION, commonly_supported, shared)
        return lambda content: _relabel(write(content), FUTURE_VERSION)


class FutureMemberCodec(StreamsMemberCodec):
    """A host whose latest supported version is 12; below 12 it writes the current layouts (with
    latest supported version 12, so a coordinator can tell when everyone could upgrade)."""

    def encode_subscription(self, version: int, active: frozenset[TaskId], standby: frozenset[TaskId]) -> bytes:
        if version != FUTURE_VERSION:
            return super().encode_subscription(version, active, standby)
        return _relabel(super().encode_subscription(LATEST_SUPPORTED_VERSION, active, standby), FUTURE_VERSION)

    def decode_assignment(self, data: bytes) -> ReceivedAssignment:
        if _version(data) != FUTURE_VERSION:
            return super().decode_assignment(data)
        got = super().decode_assignment(_relabel(data, LATEST_SUPPORTED_VERSION))
        return dataclasses.replace(got, version=FUTURE_VERSION)
