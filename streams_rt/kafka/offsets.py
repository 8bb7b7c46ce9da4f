"""The end offsets of many partitions in one request, retried while new topics settle: the last
stable offset (what a read_committed consumer can read) or the high watermark (which also counts
records of transactions whose markers are not written yet)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import IsolationLevel, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from streams_rt.kafka.watermarks import RETRIABLE
from streams_rt.protocol import TopicPartition

# librdkafka's list_offsets answers _NOENT ("Failed to query partition leaders: No leaders found")
# while a topic created a moment ago has no leader in the client's cached metadata, and the broker
# UNKNOWN_LEADER_EPOCH while its new leader's epoch has not reached it: the same "settling" case,
# except that the client's cache is refreshed only when asked for (below).
LIST_OFFSETS_RETRIABLE = RETRIABLE | {KafkaError._NOENT, KafkaError.UNKNOWN_LEADER_EPOCH}


def end_offsets(admin: AdminClient, partitions: Iterable[TopicPartition], timeout_s: float = 30.0,
                read_committed: bool = True) -> dict[TopicPartition, int]:
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    deadline = time.monotonic() + timeout_s
    while True:
        futures = admin.list_offsets({KafkaTopicPartition(tp.topic, tp.partition): OffsetSpec.latest()
                                      for tp in wanted},
                                     isolation_level=IsolationLevel.READ_COMMITTED if read_committed
                                     else IsolationLevel.READ_UNCOMMITTED, request_timeout=timeout_s)
        try:
            return {TopicPartition(k.topic, k.partition): f.result().offset for k, f in futures.items()}
        except KafkaException as exc:
            if exc.args[0].code() not in LIST_OFFSETS_RETRIABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            admin.list_topics(timeout=max(1.0, deadline - time.monotonic()))  # a metadata request: fresh leaders


def committed_or_earliest(admin: AdminClient, group: str, partitions: Iterable[TopicPartition],
                          timeout_s: float = 30.0) -> dict[TopicPartition, int]:
    """Each partition's offset committed for consumer group `group`, or its beginning when none is."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = [ConsumerGroupTopicPartitions(group, [KafkaTopicPartition(tp.topic, tp.partition) for tp in wanted])]
    (future,) = admin.list_consumer_group_offsets(request, request_timeout=timeout_s).values()
    found = {TopicPartition(k.topic, k.partition): k.offset for k in future.result().topic_partitions if k.offset >= 0}
    missing = [tp for tp in wanted if tp not in found]
    if missing:
        futures = admin.list_offsets({KafkaTopicPartition(tp.topic, tp.partition): OffsetSpec.earliest()
                                      for tp in missing},
                                     request_timeout=timeout_s)
        found.update({TopicPartition(k.topic, k.partition): f.result().offset for k, f in futures.items()})
    return found
