"""ChangelogReader.changelog_ends, on the real broker: the ends of many changelog partitions in one
request equal what `changelog_range` reads one partition at a time: the last stable offset (an open
transaction's records are not counted), an empty partition's 0, and a partition the broker does not
have is an error, as it is for `changelog_range`."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from streams_rt.protocol import TopicPartition
from streams_rt.state import ChangelogError, StateConfig, ensure_changelog_topics
from streams_rt.state.changelog import ChangelogSpec
from tests.state.conftest import StateHost

pytestmark = pytest.mark.broker


def test_one_request_reads_what_changelog_range_reads(make_config: Callable[..., StateConfig]) -> None:
    config = make_config()
    topic = f"{config.application_id}-ends-changelog"
    ensure_changelog_topics(config.bootstrap_servers, [ChangelogSpec(topic)], 3)
    producer = Producer({"bootstrap.servers": config.bootstrap_servers, "transactional.id": f"tx-{uuid.uuid4()}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, b"committed", key=b"k%d" % i, partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(7):  # left open: read_committed readers stop before it
        producer.produce(topic, b"open", key=b"o%d" % i, partition=0)
        producer.produce(topic, b"open", key=b"o%d" % i, partition=1)
    producer.flush(30)
    tps = [TopicPartition(topic, p) for p in range(3)]
    with StateHost(config) as host:
        ends = host.reader.changelog_ends(tps)
        assert ends == {tp: host.reader.changelog_range(tp)[1] for tp in tps}
        assert ends == {tps[0]: 6, tps[1]: 0, tps[2]: 0}  # 5 records and the commit marker
        assert host.reader.changelog_ends([]) == {}
        with pytest.raises(ChangelogError):
            host.reader.changelog_ends([TopicPartition(topic, 7)])
    producer.abort_transaction(30)
