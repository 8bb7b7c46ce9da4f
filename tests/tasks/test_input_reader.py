"""The batch input reader against the real broker: ranges that hold only transaction markers end
at once, offsets without committed records are not reported as lost, and records removed by
retention are."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.protocol import TopicPartition
from streams_rt.tasks.input_reader import InputReader, input_consumer
from tests.kafka.helpers import create_topic

pytestmark = pytest.mark.broker


@pytest.fixture
def reader(kafka_broker: BrokerInfo) -> Iterator[InputReader]:
    made = InputReader(input_consumer(kafka_broker.bootstrap_servers, f"reader-{uuid.uuid4().hex[:8]}"))
    yield made
    made.close()


def transactions(bootstrap: str, topic: str, *sizes: int) -> None:
    """One committed transaction per size, each ending in a commit marker that takes an offset."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for size in sizes:
        producer.begin_transaction()
        for i in range(size):
            producer.produce(topic, f"v{i}".encode(), partition=0)
        producer.commit_transaction(30)


def offsets_read(reader: InputReader, tp: TopicPartition, start: int, end: int) -> list[int]:
    return [m.offset() or 0 for chunk in reader.read({tp: (start, end)}, timeout_s=5.0) for m in chunk.get(tp, [])]


def test_a_range_of_only_transaction_markers_ends_at_once(kafka_broker: BrokerInfo, reader: InputReader,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """[0, 3) are records, 3 is a commit marker. Reading [0, 3) sees the partition's end too (the EOF
    event can come in the same poll as the last record); the next range, [3, 4), has no record and
    must end without waiting for an event that already came."""
    topic = f"markers-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker.bootstrap_servers, topic)
    transactions(kafka_broker.bootstrap_servers, topic, 3)
    tp = TopicPartition(topic, 0)
    time.sleep(0.5)  # let the consumer's fetch reach the end, so records and EOF arrive together
    assert offsets_read(reader, tp, 0, 3) == [0, 1, 2]
    started = time.monotonic()
    assert offsets_read(reader, tp, 3, 4) == []
    assert time.monotonic() - started < 2.0
    transactions(kafka_broker.bootstrap_servers, topic, 2)  # [4, 6) records, 6 a marker
    with caplog.at_level(logging.DEBUG, logger="streams_rt.tasks.input_reader"):
        assert offsets_read(reader, tp, 4, 7) == [4, 5]
        assert offsets_read(reader, tp, 3, 6) == [4, 5]  # a seek back, to a range that starts at a marker
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # markers are not lost records


def test_records_read_past_a_batch_that_ends_at_a_marker_are_kept_for_the_next(
        kafka_broker: BrokerInfo, reader: InputReader) -> None:
    """[0, 3) records, 3 a marker, [4, 6) records, 6 a marker, all there before the first read. The
    read of [0, 3) fetches past its end: 4 and 5 are kept, and the partition's end seen. The next
    range starts at the marker (3): what is kept starts after it, and must be used, not dropped (a
    drop lost 4 and 5 once the end had been seen)."""
    topic = f"held-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker.bootstrap_servers, topic)
    transactions(kafka_broker.bootstrap_servers, topic, 3, 2)
    tp = TopicPartition(topic, 0)
    time.sleep(0.5)
    assert offsets_read(reader, tp, 0, 3) == [0, 1, 2]
    assert offsets_read(reader, tp, 3, 7) == [4, 5]


def test_records_removed_by_retention_are_reported(kafka_broker: BrokerInfo, reader: InputReader,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    topic = f"retention-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for i in range(6):
        producer.produce(topic, f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for future in admin.delete_records([KafkaTopicPartition(topic, 0, 3)]).values():
        future.result(30)
    with caplog.at_level(logging.WARNING, logger="streams_rt.tasks.input_reader"):
        assert offsets_read(reader, TopicPartition(topic, 0), 0, 6) == [3, 4, 5]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"{topic}-0: records from 0 to 2 are gone from the topic (retention?); reading from 3"]
