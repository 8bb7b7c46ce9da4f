"""The coordinator's state in a compacted topic on the real dev broker."""

from __future__ import annotations

import uuid

import pytest

from streams_rt.coordinator.group_record import GroupRecord, MemberRecord
from streams_rt.coordinator.state_store import CoordinatorSnapshot
from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.protocol import RebalanceProtocol

pytestmark = pytest.mark.broker


def test_last_generation_survives_a_new_store_instance(kafka_broker: BrokerInfo) -> None:
    from streams_rt.coordinator.kafka_state_store import KafkaStateStore

    app = f"coord-{uuid.uuid4().hex[:8]}"
    store = KafkaStateStore(kafka_broker.bootstrap_servers, app)
    assert store.load() is None
    for g in (1, 2, 7):
        store.save(CoordinatorSnapshot(app, GroupRecord(g)))
    again = KafkaStateStore(kafka_broker.bootstrap_servers, app)
    assert again.load() == CoordinatorSnapshot(app, GroupRecord(7))
    assert again.topic == f"{app}-coordinator"
    store.close()
    again.close()


def test_members_survive_a_new_store_instance(kafka_broker: BrokerInfo) -> None:
    from streams_rt.coordinator.kafka_state_store import KafkaStateStore

    app = f"coord-{uuid.uuid4().hex[:8]}"
    member = MemberRecord("m-1", "host-a", RebalanceProtocol.COOPERATIVE, 2, 4000, 8000, 3, ("0_0", "1_0"), ("0_1",))
    store = KafkaStateStore(kafka_broker.bootstrap_servers, app)
    store.save(CoordinatorSnapshot(app, GroupRecord(3, RebalanceProtocol.COOPERATIVE, (member,))))
    again = KafkaStateStore(kafka_broker.bootstrap_servers, app)
    assert again.load() == CoordinatorSnapshot(app, GroupRecord(3, RebalanceProtocol.COOPERATIVE, (member,)))
    store.close()
    again.close()
