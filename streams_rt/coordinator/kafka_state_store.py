"""Coordinator state in a compacted Kafka topic `<application.id>-coordinator` (one key: the
application id), so a driver restarted on another machine finds its last generation."""

from __future__ import annotations

import logging

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.coordinator.state_store import CoordinatorSnapshot
from streams_rt.kafka.records import offset
from streams_rt.kafka.watermarks import watermark_offsets

log = logging.getLogger(__name__)


class KafkaStateStore:
    def __init__(self, bootstrap_servers: str, application_id: str, *, timeout_s: float = 30.0,
                 replication_factor: int = 1) -> None:
        """`replication_factor`: the application's replication.factor (-1: the broker's default)."""
        self.topic = f"{application_id}-coordinator"
        self.application_id = application_id
        self._bootstrap = bootstrap_servers
        self._replication_factor = replication_factor
        self._timeout_s = timeout_s
        self._ensure_topic()
        self._producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "acks": "all"})

    def _ensure_topic(self) -> None:
        admin = AdminClient({"bootstrap.servers": self._bootstrap})
        futures = admin.create_topics(
            [NewTopic(self.topic, num_partitions=1, replication_factor=self._replication_factor,
                      config={"cleanup.policy": "compact"})]
        )
        try:
            futures[self.topic].result(self._timeout_s)
            log.info("created compacted topic %s for the coordinator's state", self.topic)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise

    def load(self) -> CoordinatorSnapshot | None:
        """The last snapshot written: read the single partition from the start to its end (its
        offsets are retried: the topic may have been created a moment ago)."""
        consumer = Consumer({
            "bootstrap.servers": self._bootstrap, "group.id": f"{self.topic}-reader",
            "enable.auto.commit": False, "isolation.level": "read_committed",
        })
        try:
            low, high = watermark_offsets(consumer, self.topic, 0, self._timeout_s)
            if high <= low:
                return None
            consumer.assign([TopicPartition(self.topic, 0, low)])
            last: CoordinatorSnapshot | None = None
            position = low
            while position < high:
                msg = consumer.poll(self._timeout_s)
                if msg is None:
                    raise TimeoutError(
                        f"reading {self.topic}: no record at offset {position} within {self._timeout_s} s")
                if msg.error():
                    raise KafkaException(msg.error())
                position = offset(msg) + 1
                value = msg.value()
                if msg.key() == self.application_id.encode() and value is not None:
                    last = CoordinatorSnapshot.from_json(value)
            return last
        finally:
            consumer.close()

    def save(self, snapshot: CoordinatorSnapshot) -> None:
        errors: list[object] = []
        self._producer.produce(
            self.topic, key=self.application_id.encode(), value=snapshot.to_json(),
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
        remaining = self._producer.flush(self._timeout_s)
        if remaining or errors:
            raise RuntimeError(f"could not persist generation {snapshot.group.generation} to {self.topic}:"
                               f" {errors or 'timeout'}")

    def close(self) -> None:
        """Flush and drop the producer, so it stops reconnecting once the broker is gone."""
        self._producer.flush(self._timeout_s)
        del self._producer
