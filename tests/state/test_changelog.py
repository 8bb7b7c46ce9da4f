"""Changelog topics on the real broker: creation, configs, records and tombstones, checkpoints."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state import (
    AT_LEAST_ONCE,
    ChangelogError,
    ChangelogWriter,
    StateConfig,
    StoreSpec,
    WindowSpec,
    changelog_topic,
    ensure_changelog_topics,
)
from tests.state.conftest import StateHost

pytestmark = pytest.mark.broker

KV = StoreSpec("counts")
WIN = StoreSpec("windows", WindowSpec(retention_ms=3_600_000, window_size_ms=60_000))


def _topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result()
    return {name: entry.value for name, entry in entries.items()}


def test_topics_are_created_compacted_with_source_partitions(eos_config: StateConfig) -> None:
    bootstrap = eos_config.bootstrap_servers
    specs = [KV.changelog(eos_config.application_id), WIN.changelog(eos_config.application_id)]
    ensure_changelog_topics(bootstrap, specs, partitions=3)
    ensure_changelog_topics(bootstrap, specs, partitions=3)  # idempotent
    kv_topic = changelog_topic(eos_config.application_id, "counts")
    assert kv_topic == f"{eos_config.application_id}-counts-changelog"
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert len(metadata[kv_topic].partitions) == 3
    assert _topic_config(bootstrap, kv_topic)["cleanup.policy"] == "compact"
    win_config = _topic_config(bootstrap, changelog_topic(eos_config.application_id, "windows"))
    assert win_config["cleanup.policy"] == "compact,delete"
    assert int(win_config["retention.ms"]) == 3_600_000 + 24 * 3600 * 1000
    with pytest.raises(ChangelogError, match="has 3 partitions, the source has 4"):
        ensure_changelog_topics(bootstrap, specs, partitions=4)


def test_config_creates_topics_with_its_replication_factor(make_config: Callable[..., StateConfig]) -> None:
    config: StateConfig = make_config(replication_factor=2)  # one broker: two replicas cannot be placed
    with pytest.raises(ChangelogError, match="cannot be created"):
        config.ensure_changelog_topics([KV.changelog(config.application_id)], partitions=1)
    make_config().ensure_changelog_topics([KV.changelog(config.application_id)], partitions=1)


@pytest.mark.parametrize("guarantee", [AT_LEAST_ONCE, "exactly_once_v2"])
def test_records_tombstones_and_checkpoint(make_config: Callable[..., StateConfig], guarantee: str) -> None:
    config: StateConfig = make_config(processing_guarantee=guarantee)
    ensure_changelog_topics(config.bootstrap_servers, [KV.changelog(config.application_id)], partitions=2)
    task = TaskId(0, 1)
    with StateHost(config) as host:
        directory = host.directory
        state = host.active(task, [KV])
        store = state.kv_store("counts")
        store.put(b"a", b"1")
        store.put(b"b", b"2")
        state.commit()
        store.delete(b"a")
        state.commit()
        checkpoint = directory.checkpoint_for(task)
        tp = TopicPartition(changelog_topic(config.application_id, "counts"), 1)
        last = checkpoint.read()[tp]
        lines = checkpoint.path.read_text().splitlines()
        assert lines == ["0", "1", f"{tp.topic} 1 {last}"]
        state.close()

    consumer = Consumer({"bootstrap.servers": config.bootstrap_servers, "group.id": "check",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([KafkaTopicPartition(tp.topic, 1, 0)])
    records = []
    while True:
        message = consumer.poll(10)
        assert message is not None
        if message.error():
            break
        records.append((message.key(), message.value(), message.offset()))
    consumer.close()
    assert [(k, v) for k, v, _ in records] == [(b"a", b"1"), (b"b", b"2"), (b"a", None)]
    # The checkpoint names the last record the store contains; under exactly-once it may name the
    # transaction's commit marker right after it (the commit asks the broker where the partition ends,
    # and a restore from the next offset reads the same).
    marker = 1 if guarantee == "exactly_once_v2" else 0
    last_record = records[-1][2]
    assert last is not None and last_record is not None
    assert last_record <= last <= last_record + marker


def test_a_dirty_close_purges_instead_of_flushing() -> None:
    """The stores dropped those writes: they must not be sent, nor wait for a broker that is gone."""
    writer = ChangelogWriter("127.0.0.1:1", timeout_s=60)  # nothing listens: no record can be delivered
    for i in range(100):
        writer.send("t", 0, b"k%d" % i, b"v")
    started = time.monotonic()
    closing = threading.Thread(target=writer.close, kwargs={"discard": True}, daemon=True)
    closing.start()
    closing.join(timeout=10)
    assert not closing.is_alive() and time.monotonic() - started < 10
