"""A standby catches up while the active (another process) writes, reports offset sum and lag,
checkpoints through the state updater, and is promoted without re-reading what it applied."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streams_rt.protocol import TaskId
from streams_rt.state import Mode, StateConfig, StateUpdater, StoreClosedError, TaskState, ensure_changelog_topics
from streams_rt.state.errors import ChangelogError
from streams_rt.state.stores.kv import RocksDBKeyValueStore
from tests.state.child import SPECS, expected_kv, expected_windows
from tests.state.conftest import Children, StateHost, wait_for_line

pytestmark = pytest.mark.broker

TASK = TaskId(0, 0)
PER_COMMIT = 200


def _poll_until(updater: StateUpdater, done: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "standby made no progress"
        updater.poll(int(time.monotonic() * 1000), 0.1)


def _promote(updater: StateUpdater, state: TaskState) -> None:
    updater.remove_standby(state.task)
    state.promote()
    updater.reader.finish_restores()
    assert state.mode is Mode.ACTIVE


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

    with StateHost(standby_config) as host:
        listener, directory = host.listener, host.directory
        state = host.standby(TASK, SPECS)
        updater = StateUpdater(host.reader, standby_config.commit_interval_ms)
        updater.add_standby(state, int(time.monotonic() * 1000))
        try:
            # Catch up while the active keeps writing: applied offsets grow as commits arrive.
            _poll_until(updater, lambda: state.offset_sum() > 0)
            first = state.offset_sum()
            _poll_until(updater, lambda: state.offset_sum() > first)
            _poll_until(updater, lambda: directory.task_offset_sums() != {})  # the periodic checkpoint
            stop_file.touch()
            done = wait_for_line(child, "DONE")
            commits = int(done.split()[1])
            assert child.wait(timeout=30) == 0
            _poll_until(updater, lambda: state.lag() == 0)
            standby_sum = state.offset_sum()
            assert dict(state.kv_store("kv").all()) == expected_kv(commits, PER_COMMIT)
            with pytest.raises(StoreClosedError, match="read-only"):
                state.kv_store("kv").put(b"k", b"v")
            with pytest.raises(TypeError, match="store win is a RocksDBWindowStore, not a key-value store"):
                state.kv_store("win")
            with pytest.raises(TypeError, match="store kv is a RocksDBKeyValueStore, not a window store"):
                state.window_store("kv")

            _promote(updater, state)
            # Caught up (past the last commit marker too): no restore even starts.
            assert listener.starts("kv") == [] and listener.starts("win") == []
            assert listener.restored("kv") == 0 and listener.restored("win") == 0
            assert state.offset_sum() >= standby_sum
            assert dict(state.kv_store("kv").all()) == expected_kv(commits, PER_COMMIT)
            assert dict(state.window_store("win").fetch(b"w", 0, 10**12)) == expected_windows(commits)
            state.kv_store("kv").put(b"promoted", b"yes")
            state.commit()
            assert state.kv_store("kv").get(b"promoted") == b"yes"
        finally:
            state.close()


@contextlib.contextmanager
def _active_and_standby(
        make_config: Callable[..., StateConfig]) -> Iterator[tuple[TaskState, TaskState, StateUpdater, StateHost]]:
    """TASK active on one simulated host, and its standby followed by an updater on another (the
    standby's host, for its restore listener); both tasks are closed afterwards."""
    writer_config, standby_config = make_config("w"), make_config("s")
    ensure_changelog_topics(writer_config.bootstrap_servers,
                            [s.changelog(writer_config.application_id) for s in SPECS], 1)
    with StateHost(writer_config) as writer_host, StateHost(standby_config) as host:
        active = writer_host.active(TASK, SPECS)
        standby = host.standby(TASK, SPECS)
        updater = StateUpdater(host.reader, standby_config.commit_interval_ms)
        updater.add_standby(standby, 0)
        try:
            yield active, standby, updater, host
        finally:
            standby.close()
            active.close(clean=False)  # closing a closed task does nothing


def test_promotion_reads_only_records_the_standby_missed(make_config: Callable[..., StateConfig]) -> None:
    with _active_and_standby(make_config) as (active, standby, updater, host):
        for i in range(50):
            active.kv_store("kv").put(b"k%d" % i, b"v%d" % i)
        active.commit()
        _poll_until(updater, lambda: standby.lag() == 0)
        assert standby.offset_sum() == 49 and standby.lag() == 0
        for i in range(50, 80):  # written after the standby caught up
            active.kv_store("kv").put(b"k%d" % i, b"v%d" % i)
        active.commit()
        assert standby.lag() == 31  # 30 records and their commit marker
        active.close()
        _promote(updater, standby)
        assert host.listener.restored("kv") == 30
        assert host.listener.starts("kv") == [51]  # past record 49 and the first commit's marker
        assert dict(standby.kv_store("kv").all()) == {b"k%d" % i: b"v%d" % i for i in range(80)}


@pytest.mark.filterwarnings("ignore:Producer abort_transaction failed during close")  # the fenced old owner
def test_a_standby_fenced_ahead_aborts_the_old_owners_open_transaction_and_is_promoted_with_that_writer(
        make_config: Callable[..., StateConfig]) -> None:
    """TaskState.fence(), as the host calls it for every standby of a failover at once: the old
    owner can no longer commit, its open transaction is aborted (its writes never restored), and the
    promoted task commits with the writer fence() made."""
    with _active_and_standby(make_config) as (active, standby, updater, _):
        for i in range(20):
            active.kv_store("kv").put(b"k%d" % i, b"v%d" % i)
        active.commit()
        for i in range(20, 30):  # sent in a transaction the old owner never commits
            active.kv_store("kv").put(b"k%d" % i, b"v%d" % i)
        standby.fence()
        with pytest.raises(ChangelogError):  # the old owner is fenced: its transaction never commits
            active.commit()
        _poll_until(updater, lambda: standby.lag() == 0)
        _promote(updater, standby)
        assert dict(standby.kv_store("kv").all()) == {b"k%d" % i: b"v%d" % i for i in range(20)}
        standby.kv_store("kv").put(b"after", b"promotion")
        standby.commit()  # the writer made by fence() is the promoted task's


def test_a_standby_paused_behind_a_restore_is_promoted_and_restores(make_config: Callable[..., StateConfig]) -> None:
    """While one task restores, the reader pauses the standbys (restores first). Promoting such a
    standby takes its partitions out and puts them back for its own restore: the consumer keeps a
    partition's pause across that, so unless the reader resumes what it assigns, the restore waits
    for ever (seen as `no progress for 60 s at offset 0` after a failover)."""
    other = TaskId(0, 1)
    writer_config, standby_config = make_config("w"), make_config("s")
    ensure_changelog_topics(writer_config.bootstrap_servers,
                            [s.changelog(writer_config.application_id) for s in SPECS], 2)
    with StateHost(writer_config) as writer_host, StateHost(standby_config) as host:
        for task in (TASK, other):
            active = writer_host.active(task, SPECS)
            for i in range(50):
                active.kv_store("kv").put(b"k%d" % i, b"%s-%d" % (str(task).encode(), i))
            active.commit()
            active.close()
        standby = host.standby(TASK, SPECS)  # follows, from offset 0
        restoring = host.task(other, SPECS)
        restoring.open_active()  # a restore starts: the standby's partitions are paused
        updater = StateUpdater(host.reader, standby_config.commit_interval_ms)
        try:
            standby.promote()  # its partitions out and in again, for its restore; the other still restores
            deadline = time.monotonic() + 20
            while standby.mode is not Mode.ACTIVE or restoring.mode is not Mode.ACTIVE:
                assert time.monotonic() < deadline, f"restores stuck: {host.reader.restore_progress()}"
                updater.poll(int(time.monotonic() * 1000), 0.1)
            assert dict(standby.kv_store("kv").all()) == {b"k%d" % i: b"0_0-%d" % i for i in range(50)}
            assert dict(restoring.kv_store("kv").all()) == {b"k%d" % i: b"0_1-%d" % i for i in range(50)}
        finally:
            standby.close()
            restoring.close()


def test_a_promotion_flushes_no_memtable(make_config: Callable[..., StateConfig]) -> None:
    """A standby writes its records to RocksDB's WAL, so promoting it (and reading the tail it
    missed) leaves them in the memtable: no flush sits on the failover's path."""
    with _active_and_standby(make_config) as (active, standby, updater, host):
        for i in range(50):
            active.kv_store("kv").put(b"k%d" % i, b"v%d" % i)
        active.commit()
        _poll_until(updater, lambda: standby.offset_sum() == 49)
        for i in range(50, 80):  # the tail the promotion reads
            active.kv_store("kv").put(b"k%d" % i, b"v%d" % i)
        active.commit()
        store = standby.store("kv")
        assert isinstance(store, RocksDBKeyValueStore)
        sst_files = store.db.property_int_value("rocksdb.num-files-at-level0")
        _promote(updater, standby)
        assert host.listener.restored("kv") == 30
        assert store.db.property_int_value("rocksdb.num-files-at-level0") == sst_files
        assert dict(standby.kv_store("kv").all()) == {b"k%d" % i: b"v%d" % i for i in range(80)}
