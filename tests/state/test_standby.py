"""A standby catches up while the active (another process) writes, reports offset sum and lag,
checkpoints, and is promoted without re-reading what it applied."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state import StandbyUpdater, StateConfig, StateDirectory, TaskState, ensure_changelog_topics
from tests.state.child import SPECS, expected_kv, expected_windows
from tests.state.conftest import Children, RecordingListener, wait_for_line

pytestmark = pytest.mark.broker

TASK = TaskId(0, 0)
PER_COMMIT = 200


def _poll_until(updater: StandbyUpdater, done: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "standby made no progress"
        updater.poll(0.1)


def test_standby_follows_active_then_is_promoted(
    make_config: Callable[..., StateConfig], children: Children, tmp_path: Path
) -> None:
    active_config = make_config("active")
    standby_config = make_config("standby", commit_interval_ms=200)
    ensure_changelog_topics(active_config.bootstrap_servers,
                            [s.changelog(active_config.application_id) for s in SPECS], 1)
    stop_file = tmp_path / "stop"
    child = children.start("active", json.dumps({
        "app_id": active_config.application_id, "bootstrap": active_config.bootstrap_servers,
        "state_dir": str(active_config.state_dir), "task": str(TASK), "per_commit": PER_COMMIT,
        "stop_file": str(stop_file), "pause_s": 0.05,
    }))
    wait_for_line(child, "COMMITTED 1")

    listener = RecordingListener()
    with StateDirectory(standby_config.state_dir, standby_config.application_id) as directory:
        updater = StandbyUpdater(TaskState(standby_config, directory, TASK, SPECS, listener=listener))
        updater.open()
        try:
            # Catch up while the active keeps writing: applied offsets grow as commits arrive.
            _poll_until(updater, lambda: updater.offset_sum() > 0)
            first = updater.offset_sum()
            _poll_until(updater, lambda: updater.offset_sum() > first)
            assert directory.task_offset_sums() != {}  # the periodic checkpoint is on disk
            stop_file.touch()
            done = wait_for_line(child, "DONE")
            commits = int(done.split()[1])
            assert child.wait(timeout=30) == 0
            _poll_until(updater, lambda: updater.lag() == 0)
            standby_sum = updater.offset_sum()
            state = updater.state
            assert dict(state.store("kv").all()) == expected_kv(commits, PER_COMMIT)
            applied = dict(state.offsets)

            active = updater.promote()
            kv_tp = TopicPartition(f"{standby_config.application_id}-kv-changelog", 0)
            # Caught up (past the last commit marker too): no restore even starts.
            assert listener.starts("kv") == [] and listener.starts("win") == []
            assert all(start > applied[kv_tp] for start in listener.starts("kv"))
            assert listener.restored("kv") == 0 and listener.restored("win") == 0
            assert active.offset_sum() >= standby_sum
            assert dict(active.store("kv").all()) == expected_kv(commits, PER_COMMIT)
            assert dict(active.store("win").fetch(b"w", 0, 10**12)) == expected_windows(commits)
            active.store("kv").put(b"promoted", b"yes")
            active.commit()
            assert active.store("kv").get(b"promoted") == b"yes"
        finally:
            updater.close()


def test_promotion_reads_only_records_the_standby_missed(make_config: Callable[..., StateConfig]) -> None:
    writer_config, standby_config = make_config("w"), make_config("s")
    ensure_changelog_topics(writer_config.bootstrap_servers,
                            [s.changelog(writer_config.application_id) for s in SPECS], 1)
    with StateDirectory(writer_config.state_dir, writer_config.application_id) as wdir, \
            StateDirectory(standby_config.state_dir, standby_config.application_id) as sdir:
        active = TaskState(writer_config, wdir, TASK, SPECS)
        active.open_active()
        listener = RecordingListener()
        updater = StandbyUpdater(TaskState(standby_config, sdir, TASK, SPECS, listener=listener))
        updater.open()
        try:
            for i in range(50):
                active.store("kv").put(b"k%d" % i, b"v%d" % i)
            active.commit()
            _poll_until(updater, lambda: updater.lag() == 0)
            assert updater.offset_sum() == 49 and updater.lag() == 0
            for i in range(50, 80):  # written after the standby caught up
                active.store("kv").put(b"k%d" % i, b"v%d" % i)
            active.commit()
            assert updater.lag() == 31  # 30 records and their commit marker
            active.close()
            promoted = updater.promote()
            assert listener.restored("kv") == 30
            assert listener.starts("kv") == [51]  # past record 49 and the first commit's marker
            assert dict(promoted.store("kv").all()) == {b"k%d" % i: b"v%d" % i for i in range(80)}
        finally:
            updater.close()
