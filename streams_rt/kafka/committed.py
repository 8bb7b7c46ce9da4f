"""The committed offsets of a group's partitions, retried while the group coordinator settles: a
broker that has just started (or taken over the group's __consumer_offsets partition) answers
NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for a moment, and librdkafka's `committed` hands
that to the caller instead of asking again."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streams_rt.kafka.watermarks import broker_outage

COORDINATOR_SETTLING = frozenset({
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
})
RETRY_PAUSE_S = 0.1


class CommittedSource(Protocol):
    """What the lookup needs of a consumer (a confluent_kafka.Consumer is one)."""

    def committed(self, partitions: list[TopicPartition], timeout: float = ...) -> list[TopicPartition]: ...


def committed_offsets(consumer: CommittedSource, partitions: Sequence[TopicPartition],
                      timeout_s: float = 30.0) -> list[TopicPartition]:
    """`partitions` with their committed offsets (negative: none committed), in their order. Raises
    KafkaException for an error that does not pass on its own, or for any once `timeout_s` has
    passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return consumer.committed(list(partitions), timeout=max(0.1, deadline - time.monotonic()))
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            settling = error.code() in COORDINATOR_SETTLING or broker_outage(error)
            if not settling or time.monotonic() + RETRY_PAUSE_S > deadline:
                raise
            time.sleep(RETRY_PAUSE_S)
