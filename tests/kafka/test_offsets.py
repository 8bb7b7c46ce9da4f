"""End offsets of topics created a moment ago: librdkafka may not know their leaders yet and says
so (_NOENT, "No leaders found"); end_offsets waits that out as it does LEADER_NOT_AVAILABLE."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.offsets import end_offsets
from streams_rt.protocol import TopicPartition

pytestmark = pytest.mark.broker


def test_end_offsets_of_topics_just_created_are_zero(kafka_broker: BrokerInfo) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for _ in range(10):
        topics = [f"fresh-{uuid.uuid4().hex[:10]}" for _ in range(4)]
        for future in admin.create_topics([NewTopic(t, 4, 1) for t in topics]).values():
            future.result()
        tps = [TopicPartition(t, p) for t in topics for p in range(4)]
        assert end_offsets(admin, tps) == dict.fromkeys(tps, 0)
        assert end_offsets(admin, tps, read_committed=False) == dict.fromkeys(tps, 0)
