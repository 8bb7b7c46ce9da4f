"""End offsets of topics created a moment ago: librdkafka may not know their leaders yet and says
so (_NOENT, "No leaders found"); end_offsets waits that out as it does LEADER_NOT_AVAILABLE."""

from __future__ import annotations

import gc
import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.offsets import BrokerUnreachable, end_offsets
from streams_rt.kafka.reachability import quiet_client_config
from streams_rt.protocol import TopicPartition
from tests.kafka.helpers import free_port

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



@pytest.mark.parametrize("where", ["unreachable", "missing topic"])
def test_a_client_whose_request_failed_is_freed(kafka_broker: BrokerInfo, where: str) -> None:
    """A failed request must not keep its client alive: one did during broker bounces (a cycle through
    librdkafka's callback that the collector cannot see, on "No leaders found"), and the client then
    reconnected to the gone broker for the rest of the process. That path needs a bounce to reach (the
    fault suite's); these are the failures a test reaches at will."""
    bootstrap = f"127.0.0.1:{free_port()}" if where == "unreachable" else kafka_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap, **quiet_client_config()})
    with pytest.raises(KafkaException):  # BrokerUnreachable, or the missing topic's error
        try:
            end_offsets(admin, [TopicPartition(f"missing-{uuid.uuid4().hex[:8]}", 0)], timeout_s=1.0)
        except BrokerUnreachable as unreachable:
            raise KafkaException(unreachable.error) from None
    address = id(admin)
    del admin
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, AdminClient) and id(o) == address]
