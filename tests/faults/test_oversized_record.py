"""An oversized record written by the topology, under exactly_once_v2: one bigger than the output
topic's max.message.bytes (the broker refuses it on delivery), and one bigger than the producer's
message.max.bytes in a store's changelog (the producer refuses it at once). Either way the batch
fails with an error naming the topic and the record's size, is rolled back (nothing of it is
visible to read_committed readers), is refused the same way when asked again, and leaves every
earlier batch's records exactly as they were: nothing lost, nothing twice. The host stays up."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.offsets import end_offsets
from streams_rt.protocol import TopicPartition
from streams_rt.rpc.batches import BatchError
from streams_rt.runtime.local import LocalApplication
from streams_rt.state.changelog import changelog_topic
from streams_rt.topology import Serdes
from tests.faults.harness import wait_for_leaders
from tests.faults.oversized_topology import INPUT, OUTPUT, STORE

pytestmark = pytest.mark.broker
I64 = Serdes.int64()
TOPIC_LIMIT = 64 * 1024  # the output topic's max.message.bytes
PRODUCER_LIMIT = 1_000_000  # librdkafka's default message.max.bytes


def produce(bootstrap: str, topic: str, sizes: list[int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for size in sizes:
        producer.produce(topic, I64.serialize(size), b"k")
    assert producer.flush(30) == 0


def committed_sizes(bootstrap: str, topic: str) -> list[int]:
    """The sizes of the values in one-partition `topic` (read_committed), in offset order."""
    (end,) = end_offsets(AdminClient({"bootstrap.servers": bootstrap}), [TopicPartition(topic, 0)]).values()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"oversized-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    sizes: list[int] = []
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 60
        while end and consumer.position([KafkaTopicPartition(topic, 0)])[0].offset < end:
            assert time.monotonic() < deadline, f"{topic} not read to its end {end} within 60 s"
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                sizes.append(len(message.value() or b""))
    finally:
        consumer.close()
    return sizes


@pytest.mark.faults_short
@pytest.mark.parametrize(("where", "oversize"), [("output", TOPIC_LIMIT + 40_000),
                                                 ("changelog", PRODUCER_LIMIT + 500_000)])
def test_an_oversized_record_fails_its_batch_with_the_topic_and_size(
        kafka_broker: BrokerInfo, tmp_path: Path, where: str, oversize: int) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = f"-{uuid.uuid4().hex[:8]}"
    source, output = f"{INPUT}{suffix}", f"{OUTPUT}{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(source, 1, 1), NewTopic(output, 1, 1, config={"max.message.bytes": str(TOPIC_LIMIT)})]
    for future in admin.create_topics(topics).values():
        future.result()
    wait_for_leaders(admin, [source, output], partitions=1)
    app_id = f"oversized-{uuid.uuid4().hex[:8]}"
    app = LocalApplication("tests.faults.oversized_topology:oversized",
                           {"application.id": app_id, "bootstrap.servers": bootstrap,
                            "processing.guarantee": "exactly_once_v2", "commit.interval.ms": 500,
                            "statestore.cache.max.bytes": 0},
                           tmp_path / "app", hosts=1, topology_args={"suffix": suffix, "where": where})
    loop = app.loop()
    written = output if where == "output" else changelog_topic(app_id, STORE)
    stamp = 0 if where == "output" else 8  # a reduce's store keeps each value behind its timestamp
    record_bytes = oversize + stamp + 1  # and the key, one byte
    try:
        app.wait_until_running(loop)
        produce(bootstrap, source, [10, 20])
        deadline = time.monotonic() + 60
        while loop.run_once().total_records == 0 or loop.lag(loop.status()[1]):
            assert time.monotonic() < deadline, "the first two records not processed within 60 s"
        produce(bootstrap, source, [30, oversize, 40])
        for _attempt in range(2):  # refused the same way when asked again: nothing half-done stays
            deadline = time.monotonic() + 60
            with pytest.raises(BatchError) as refused:
                while time.monotonic() < deadline:
                    loop.run_once()
            error = refused.value
            assert error.code == "FAILED", error
            assert written in error.message and f"{record_bytes} bytes" in error.message, error.message
        _, statuses = loop.status()
        (status,) = statuses.values()
        assert sum(status.positions.values()) == 2, "the failed batch's input was consumed"
        assert committed_sizes(bootstrap, written) == [10 + stamp, 20 + stamp], "the failed batch left records behind"
        host = app.hosts["host-0"]
        assert host.alive
        assert f"{record_bytes} bytes" in host.log_tail(20_000)
    finally:
        loop.close()
        app.close()
