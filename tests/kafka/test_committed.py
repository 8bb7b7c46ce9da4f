"""committed_offsets waits out a group coordinator that is settling (a broker just started answers
NOT_COORDINATOR for a moment, which librdkafka hands straight to the caller) and raises any other
error, and any once its time is up."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streams_rt.kafka.committed import committed_offsets


class AnswersAfter:
    """A consumer whose `committed` fails with `errors` in turn, then answers offset 7 for each."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.calls = 0

    def committed(self, partitions: list[TopicPartition], timeout: float = 30.0) -> list[TopicPartition]:
        self.calls += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return [TopicPartition(p.topic, p.partition, 7) for p in partitions]


PARTITIONS = [TopicPartition("in", 0), TopicPartition("in", 1)]


@pytest.mark.parametrize("error", [KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                   KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._TRANSPORT,
                                   KafkaError._TIMED_OUT])
def test_a_settling_coordinator_is_asked_again(error: int) -> None:
    consumer = AnswersAfter(error, error)
    found = committed_offsets(consumer, PARTITIONS, timeout_s=10)
    assert [(p.topic, p.partition, p.offset) for p in found] == [("in", 0, 7), ("in", 1, 7)]
    assert consumer.calls == 3


def test_any_other_error_is_raised_at_once() -> None:
    consumer = AnswersAfter(KafkaError.GROUP_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException) as raised:
        committed_offsets(consumer, PARTITIONS, timeout_s=10)
    assert raised.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert consumer.calls == 1


def test_a_coordinator_that_never_settles_is_raised_once_the_time_is_up() -> None:
    consumer = AnswersAfter(*[KafkaError.NOT_COORDINATOR] * 1000)
    with pytest.raises(KafkaException) as raised:
        committed_offsets(consumer, PARTITIONS, timeout_s=0.5)
    assert raised.value.args[0].code() == KafkaError.NOT_COORDINATOR
    assert 2 <= consumer.calls < 10
