"""A Kafka message's coordinates, typed. confluent-kafka types `topic()`, `partition()` and `offset()`
as optional because some error events carry none; a consumed record, a partition EOF event and a
delivery report always carry all three. These accessors say so once, instead of at every use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from confluent_kafka import Message

from streams_rt.protocol import TopicPartition


def topic_partition(message: Message) -> TopicPartition:
    topic, partition = message.topic(), message.partition()
    if topic is None or partition is None:
        raise ValueError(f"a Kafka message without a topic or partition ({message.error()})")
    return TopicPartition(topic, partition)


def offset(message: Message) -> int:
    found = message.offset()
    if found is None:
        raise ValueError(f"a Kafka message from {message.topic()} without an offset ({message.error()})")
    return found


def offsets(records: Sequence[Message]) -> list[int]:
    """Every record's offset, read in C with no check per record (a consumed record has one)."""
    return cast(list[int], list(map(Message.offset, records)))
