"""kill -9 of the writing process mid-write: the restore equals the last committed state; kill -9
of a standby after its checkpoint: the restore equals the checkpointed state."""

from __future__ import annotations

import json
import signal

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from streams_rt.protocol import TaskId
from streams_rt.state import StateConfig, ensure_changelog_topics
from tests.state.child import SPECS, batch_writes, expected_kv, expected_windows
from tests.state.conftest import Children, StateHost, wait_for_line

pytestmark = pytest.mark.broker

TASK = TaskId(0, 1)
PER_COMMIT = 400


def _end_offset(bootstrap: str, topic: str, isolation: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe", "isolation.level": isolation})
    try:
        return consumer.get_watermark_offsets(KafkaTopicPartition(topic, TASK.partition), timeout=10)[1]
    finally:
        consumer.close()


def test_kill_9_mid_write_restores_last_commit(eos_config: StateConfig, children: Children) -> None:
    config = eos_config
    ensure_changelog_topics(config.bootstrap_servers, [s.changelog(config.application_id) for s in SPECS], 2)
    commits = 3
    child = children.start("writer", json.dumps({
        "app_id": config.application_id, "bootstrap": config.bootstrap_servers,
        "state_dir": str(config.state_dir), "task": str(TASK), "commits": commits, "per_commit": PER_COMMIT,
    }))
    wait_for_line(child, f"COMMITTED {commits}")
    wait_for_line(child, "MIDWRITE")
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL

    # The changelog really holds records written after the last commit (in an open transaction).
    topic = f"{config.application_id}-kv-changelog"
    assert _end_offset(config.bootstrap_servers, topic, "read_uncommitted") > _end_offset(
        config.bootstrap_servers, topic, "read_committed")

    with StateHost(config) as host:  # the dead child's locks are gone
        listener = host.listener
        state = host.active(TASK, SPECS)  # fences the dead writer's transaction, then restores the tail
        try:
            assert dict(state.kv_store("kv").all()) == expected_kv(commits, PER_COMMIT)
            assert dict(state.window_store("win").fetch(b"w", 0, 10**12)) == expected_windows(commits)
            assert listener.restored("kv") == 0  # the aborted tail is invisible to the restore
            # Writing continues from the restored state.
            state.kv_store("kv").put(b"after", b"crash")
            state.commit()
        finally:
            state.close()

    # From scratch on another host: the same state, read from the changelog alone.
    other = StateConfig(config.application_id, config.bootstrap_servers, config.state_dir.parent / "other",
                        processing_guarantee=config.processing_guarantee)
    with StateHost(other) as host:
        state = host.active(TASK, SPECS)
        try:
            expected = expected_kv(commits, PER_COMMIT) | {b"after": b"crash"}
            assert dict(state.kv_store("kv").all()) == expected
        finally:
            state.close()


def test_kill_9_standby_after_checkpoint_keeps_window_segments(
    eos_config: StateConfig, children: Children
) -> None:
    """Window segments are column families of their own, and a standby's writes reach them through
    RocksDB's WAL: the checkpoint must come after that WAL is synced, or the segments' data dies
    with the process."""
    config = eos_config
    ensure_changelog_topics(config.bootstrap_servers, [s.changelog(config.application_id) for s in SPECS], 2)
    commits = 5
    writer_config = StateConfig(config.application_id, config.bootstrap_servers, config.state_dir.parent / "writer",
                                processing_guarantee=config.processing_guarantee)
    with StateHost(writer_config) as writer_host:
        active = writer_host.active(TASK, SPECS)
        for commit in range(commits):
            for k, v in batch_writes(commit, PER_COMMIT):
                active.kv_store("kv").put(k, v)
            active.window_store("win").put(b"w", b"w%d" % commit, commit * 60_000)
            active.commit()
        active.close()

    child = children.start("standby", json.dumps({
        "app_id": config.application_id, "bootstrap": config.bootstrap_servers,
        "state_dir": str(config.state_dir), "task": str(TASK),
    }))
    reported = json.loads(wait_for_line(child, "CHECKPOINTED").split(" ", 1)[1])
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL

    with StateHost(config) as host:
        listener = host.listener
        checkpointed = host.directory.checkpoint_for(TASK).read()
        assert {f"{tp.topic} {tp.partition}": offset for tp, offset in checkpointed.items()} == reported
        assert len(checkpointed) == 2
        state = host.active(TASK, SPECS)
        try:
            # Nothing is read again: what the checkpoint names must be on disk.
            assert listener.restored("kv") == 0 and listener.restored("win") == 0
            assert dict(state.window_store("win").fetch(b"w", 0, 2**63 - 1)) == expected_windows(commits)
            assert dict(state.kv_store("kv").all()) == expected_kv(commits, PER_COMMIT)
            assert state.offsets == checkpointed
        finally:
            state.close()
