"""What the batch input reader asks of its consumer. librdkafka's consume(n, timeout) returns once
it has n messages or the timeout passed, so a reader that asks for more than its ranges still hold
waits out the timeout at the end of every batch (once 200 ms per task batch, most of the latency at
low input rates). A consumer stand-in that serves queued records says which calls would have waited."""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from streams_rt.protocol import TopicPartition
from streams_rt.tasks.input_reader import InputReader


class QueuedConsumer:
    """Serves the records already fetched, in order; a consume() that asks for more than are there
    would block in librdkafka until its timeout, and is counted as a wait."""

    def __init__(self, records: Sequence[Message]) -> None:
        self.queue = list(records)
        self.waits = 0

    def incremental_assign(self, partitions: list[KafkaTopicPartition]) -> None:
        self.queue = [m for m in self.queue if not any(
            m.topic() == p.topic and m.partition() == p.partition and (m.offset() or 0) < p.offset
            for p in partitions)]

    def incremental_unassign(self, partitions: list[KafkaTopicPartition]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        taken, self.queue = self.queue[:num_messages], self.queue[num_messages:]
        if len(taken) < num_messages:
            self.waits += 1
        return taken


def records(topic: str, partition: int, offsets: range) -> list[Message]:
    return [Message(topic=topic, partition=partition, offset=o, key=b"k", value=b"v") for o in offsets]


def test_a_batch_whose_records_are_fetched_already_never_waits_on_the_consumer() -> None:
    tp = TopicPartition("input", 0)
    consumer = QueuedConsumer(records("input", 0, range(0, 12)))
    reader = InputReader(consumer)  # type: ignore[arg-type]  # the stand-in has what the reader calls
    first = [m.offset() for chunk in reader.read({tp: (0, 5)}) for m in chunk[tp]]
    second = [m.offset() for chunk in reader.read({tp: (5, 12)}) for m in chunk[tp]]
    assert (first, second, consumer.waits) == ([0, 1, 2, 3, 4], list(range(5, 12)), 0)


def test_ranges_of_two_partitions_never_wait_on_the_consumer() -> None:
    a, b = TopicPartition("input", 0), TopicPartition("input", 1)
    interleaved = [m for pair in zip(records("input", 0, range(0, 6)), records("input", 1, range(0, 6)), strict=True)
                   for m in pair]
    consumer = QueuedConsumer(interleaved)
    reader = InputReader(consumer)  # type: ignore[arg-type]
    read: dict[TopicPartition, list[int | None]] = {a: [], b: []}
    for chunk in reader.read({a: (0, 4), b: (0, 6)}):
        for tp, found in chunk.items():
            read[tp] += [m.offset() for m in found]
    assert (read, consumer.waits) == ({a: [0, 1, 2, 3], b: [0, 1, 2, 3, 4, 5]}, 0)
