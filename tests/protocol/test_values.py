"""The value types: round trips for every version, and refusing what a version cannot carry."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.protocol import (
    NO_NEXT_REBALANCE,
    OFFSET_SUM_OFFSET_UNKNOWN,
    OFFSET_SUM_RUNNING_ACTIVE,
    OFFSET_SUM_UNKNOWN,
    UNKNOWN_VERSION,
    AssignmentInfo,
    AssignmentWriter,
    AssignorError,
    HostInfo,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
    decode_assignment,
    decode_subscription,
)
from tests.protocol.samples import VERSIONS
from tests.protocol.strategies import assignments, subscriptions

PID = uuid.UUID(int=1)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(VERSIONS).flatmap(subscriptions))
def test_subscription_round_trip(info: SubscriptionInfo) -> None:
    # Values round-trip; bytes need not: v7-9 groups are ordered as Kafka's computeIfAbsent orders them,
    # which is not idempotent (it reverses colliding keys), exactly as re-building Kafka's object would be.
    assert decode_subscription(info.encode()) == info


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(VERSIONS).flatmap(assignments))
def test_assignment_round_trip(info: AssignmentInfo) -> None:
    data = info.encode()
    assert decode_assignment(data) == info
    assert decode_assignment(data).encode() == data


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(VERSIONS).flatmap(assignments))
def test_a_round_writer_writes_the_same_bytes_as_the_whole_assignment(info: AssignmentInfo) -> None:
    """What a round's members share is encoded once; each member's bytes are still Kafka's whole."""
    writer = AssignmentWriter(
        info.version,
        commonly_supported_version=info.commonly_supported_version,
        partitions_by_host=info.partitions_by_host,
        standby_partitions_by_host=info.standby_partitions_by_host,
        error_code=info.error_code,
        next_rebalance_ms=info.next_rebalance_ms,
    )
    assert writer.encode(info.active_tasks, info.standby_tasks) == info.encode()
    assert writer.encode() == AssignmentInfo.for_version(
        info.version, commonly_supported_version=info.commonly_supported_version,
        partitions_by_host=info.partitions_by_host, standby_partitions_by_host=info.standby_partitions_by_host,
        error_code=info.error_code, next_rebalance_ms=info.next_rebalance_ms,
    ).encode()


def test_a_round_writer_refuses_a_members_tasks_its_version_cannot_carry() -> None:
    writer = AssignmentWriter(9, partitions_by_host={HostInfo("h", 1): (TopicPartition("t", 0),)})
    with pytest.raises(ValueError, match="named topologies"):
        writer.encode([TaskId(0, 0, "x")])
    with pytest.raises(ValueError, match="repeat a partition"):
        writer.encode(standby_tasks={TaskId(0, 1): [TopicPartition("t", 1), TopicPartition("t", 1)]})


def test_old_subscriptions_keep_only_active_versus_standby() -> None:
    sums = {TaskId(0, 0): OFFSET_SUM_RUNNING_ACTIVE, TaskId(0, 1): 42, TaskId(0, 2): OFFSET_SUM_OFFSET_UNKNOWN}
    info = SubscriptionInfo.for_version(6, PID, task_offset_sums=sums)
    unknown = OFFSET_SUM_UNKNOWN
    assert info.task_offset_sums == {TaskId(0, 0): -2, TaskId(0, 1): unknown, TaskId(0, 2): unknown}
    assert info.prev_tasks == {TaskId(0, 0)} and info.standby_tasks == {TaskId(0, 1), TaskId(0, 2)}
    assert SubscriptionInfo.for_version(7, PID, task_offset_sums=sums).task_offset_sums == sums


def test_for_version_drops_what_old_versions_cannot_carry() -> None:
    info = SubscriptionInfo.for_version(
        1, PID, user_endpoint="h:1", unique_field=3, error_code=AssignorError.ASSIGNMENT_ERROR, client_tags={"a": "b"}
    )
    assert (info.latest_supported_version, info.user_endpoint, info.unique_field) == (UNKNOWN_VERSION, None, 0)
    assert (info.error_code, dict(info.client_tags)) == (AssignorError.NONE, {})
    asg = AssignmentInfo.for_version(
        1,
        partitions_by_host={HostInfo("h", 1): [TopicPartition("t", 0)]},
        error_code=AssignorError.VERSION_PROBING,
        next_rebalance_ms=5,
    )
    assert (asg.commonly_supported_version, dict(asg.partitions_by_host)) == (UNKNOWN_VERSION, {})
    assert (asg.error_code, asg.next_rebalance_ms) == (AssignorError.NONE, NO_NEXT_REBALANCE)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"version": 0, "latest_supported_version": 11},
        {"version": 12, "latest_supported_version": 12},
        {"version": 2, "latest_supported_version": 11},
        {"version": 5, "latest_supported_version": 4},
        {"version": 1, "latest_supported_version": -1, "user_endpoint": "h:1"},
        {"version": 11, "latest_supported_version": 11, "user_endpoint": ""},
        {"version": 6, "latest_supported_version": 11, "task_offset_sums": {TaskId(0, 0): 5}},
        {"version": 9, "latest_supported_version": 11, "task_offset_sums": {TaskId(0, 0, "x"): 5}},
        {"version": 11, "latest_supported_version": 11, "task_offset_sums": {TaskId(0, 0, ""): 5}},
        {"version": 11, "latest_supported_version": 11, "task_offset_sums": {TaskId(2**31, 0): 5}},
        {"version": 11, "latest_supported_version": 11, "task_offset_sums": {TaskId(0, 0): 2**63}},
        {"version": 7, "latest_supported_version": 11, "unique_field": 1},
        {"version": 11, "latest_supported_version": 11, "unique_field": 128},
        {"version": 8, "latest_supported_version": 11, "error_code": AssignorError.SHUTDOWN_REQUESTED},
        {"version": 11, "latest_supported_version": 11, "error_code": 9},
        {"version": 10, "latest_supported_version": 11, "client_tags": {"a": "b"}},
        {"version": 11, "latest_supported_version": 11, "client_tags": {"a": "\ud800"}},
    ],
)
def test_subscription_refuses_what_its_version_cannot_carry(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SubscriptionInfo(process_id=PID, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"version": 0, "commonly_supported_version": 11},
        {"version": 12, "commonly_supported_version": 11},
        {"version": 2, "commonly_supported_version": 11},
        {"version": 9, "commonly_supported_version": 11, "active_tasks": [TaskId(0, 0, "x")]},
        {"version": 11, "commonly_supported_version": 11, "standby_tasks": {TaskId(0, 0, ""): []}},
        {"version": 1, "commonly_supported_version": -1, "partitions_by_host": {HostInfo("h", 1): []}},
        {"version": 5, "commonly_supported_version": 11, "standby_partitions_by_host": {HostInfo("h", 1): []}},
        {"version": 3, "commonly_supported_version": 11, "error_code": AssignorError.VERSION_PROBING},
        {"version": 6, "commonly_supported_version": 11, "next_rebalance_ms": 0},
        {"version": 11, "commonly_supported_version": 11, "next_rebalance_ms": 2**63},
        {
            "version": 11,
            "commonly_supported_version": 11,
            "partitions_by_host": {HostInfo("h", 1): [TopicPartition("t", 0), TopicPartition("t", 0)]},
        },
        {"version": 4, "commonly_supported_version": 11, "partitions_by_host": {HostInfo("h" * 70000, 1): []}},
    ],
)
def test_assignment_refuses_what_its_version_cannot_carry(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        AssignmentInfo(**kwargs).encode()


def test_values_are_read_only() -> None:
    info = SubscriptionInfo.for_version(11, PID, task_offset_sums={TaskId(0, 0): 1})
    with pytest.raises(TypeError):
        info.task_offset_sums[TaskId(0, 1)] = 2  # type: ignore[index]
    with pytest.raises(AttributeError):
        info.version = 3  # type: ignore[misc]
