"""A partition's watermark offsets, retried while a new topic settles: right after a topic is
created the broker may answer LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PART for a moment. Here,
in the broker-facing package, so the coordinator and the state package share it without either
depending on the other."""

from __future__ import annotations

import time
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, TopicPartition

RETRIABLE = frozenset({
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._TIMED_OUT,
})
# What a client sees while its broker is down or restarting: the connection, and with it the
# partition's metadata, is gone for a while. Worth retrying for as long as the outage lasts.
BROKER_OUTAGE = RETRIABLE | frozenset({
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError._DESTROY_BROKER,  # the client dropped the broker's handle (it left the metadata)
})


def broker_outage(error: KafkaError) -> bool:
    """An error a broker outage (or a leader moving) causes, which passes once the broker is back."""
    return error.code() in BROKER_OUTAGE


class WatermarkSource(Protocol):
    """What a watermark lookup needs of a consumer (a confluent_kafka.Consumer is one)."""

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float = ...,
                              cached: bool = ...) -> tuple[int, int]: ...


def watermark_offsets(consumer: WatermarkSource, topic: str, partition: int,
                      timeout_s: float = 30.0) -> tuple[int, int]:
    """(low, high) of the partition; high is the last stable offset under read_committed. Raises
    KafkaException for an error that is not retriable, or for any once `timeout_s` has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=5.0)
        except KafkaException as exc:
            if exc.args[0].code() not in RETRIABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
