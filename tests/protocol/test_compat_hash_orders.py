"""Kafka writes some collections in the iteration order of its internal HashMaps and HashSets.
These cases aim at the table growth rules (load factor, a crowded bucket doubling a small table,
computeIfAbsent's head insertion) with colliding hashes, and compare bytes with Kafka's encoder.
Not covered, and not emulated: a tree bin, i.e. one bucket of a table of 64+ buckets holding 8 or more
keys with computeIfAbsent (9 or more with put/HashSet.add), which takes deliberately colliding keys
(e.g. 49 subtopology ids that are all multiples of 16)."""

from __future__ import annotations

import uuid

import pytest

from streams_rt.protocol import (
    OFFSET_SUM_RUNNING_ACTIVE,
    AssignmentInfo,
    HostInfo,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
)
from tests.protocol.harness import KafkaJava, assignment_request, subscription_request

pytestmark = pytest.mark.jvm
PROCESS = uuid.UUID(int=42)
# Java's String.hashCode is the same for all four ("Aa" and "BB" collide), so they share a bucket.
SAME_HASH_TOPICS = ["AaAa", "AaBB", "BBAa", "BBBB"]


def _check_subscription(kafka_java: KafkaJava, info: SubscriptionInfo) -> None:
    kafka = kafka_java.ok("sub_encode", **subscription_request(info))["hex"]
    assert info.encode().hex() == kafka


def _check_assignment(kafka_java: KafkaJava, info: AssignmentInfo) -> None:
    kafka = kafka_java.ok("asg_encode", **assignment_request(info))["hex"]
    assert info.encode().hex() == kafka


@pytest.mark.parametrize(
    ("count", "stride"),
    [(n, s) for n in (1, 8, 9, 12, 13, 14) for s in (1, 16, 32, -16)]
    + [(n, s) for n in (24, 25) for s in (1, 16, -16)]
    + [(49, 1), (100, 1), (1000, 1)],
)
def test_grouped_offset_sums_follow_compute_if_absent_order(kafka_java: KafkaJava, count: int, stride: int) -> None:
    sums = {TaskId(i * stride, p): i * 10 + p for i in reversed(range(count)) for p in (1, 0)}
    for version in (7, 9):
        _check_subscription(kafka_java, SubscriptionInfo.for_version(version, PROCESS, task_offset_sums=sums))


@pytest.mark.parametrize(
    ("count", "stride"), [(n, s) for n in (1, 8, 9, 12, 13, 30) for s in (1, 16)] + [(60, 1), (500, 1)]
)
def test_task_sets_follow_hash_set_order(kafka_java: KafkaJava, count: int, stride: int) -> None:
    sums = {TaskId(s, i * stride): OFFSET_SUM_RUNNING_ACTIVE if i % 3 else 5 for s in (0, 3) for i in range(count)}
    for version in (1, 6):
        _check_subscription(kafka_java, SubscriptionInfo.for_version(version, PROCESS, task_offset_sums=sums))


@pytest.mark.parametrize("partitions", [1, 9, 12, 13, 50, 400])
def test_topic_dictionary_follows_hash_orders(kafka_java: KafkaJava, partitions: int) -> None:
    topics = [*SAME_HASH_TOPICS, "input", "Ω-topic", "x"]
    by_host = {
        HostInfo("a", 1): [TopicPartition(t, p * 16) for t in topics for p in range(partitions) if p % 2 == 0],
        HostInfo("b", 2): [TopicPartition(t, p * 16) for t in reversed(topics) for p in range(partitions) if p % 2],
    }
    standby = {HostInfo("c", 3): [TopicPartition("standby-only", 0), TopicPartition("AaAa", 7)]}
    for version in (5, 6, 11):
        info = AssignmentInfo.for_version(version, partitions_by_host=by_host, standby_partitions_by_host=standby)
        _check_assignment(kafka_java, info)


def test_compute_if_absent_grows_on_a_call_for_an_existing_key(kafka_java: KafkaJava) -> None:
    # 13 groups fill a 16-bucket table to its threshold; the 14th call (for an existing group)
    # doubles it, which moves -113 from bucket 0 (with 0 and -1) to bucket 16.
    subtopologies = [0, 1, 2, 3, 4, 5, 6, 8, -113, -2, -3, 7, -1]
    sums = {**{TaskId(s, 0): 0 for s in subtopologies}, TaskId(0, 1): 0}
    _check_subscription(kafka_java, SubscriptionInfo.for_version(9, PROCESS, task_offset_sums=sums))
    without_the_extra_call = {TaskId(s, 0): 0 for s in subtopologies}
    _check_subscription(kafka_java, SubscriptionInfo.for_version(9, PROCESS, task_offset_sums=without_the_extra_call))
