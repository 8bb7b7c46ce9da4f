"""State directory: layout, process id, locks across real processes, offset sums, cleanup."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from streams_rt.config.registry import default_state_dir
from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, TaskId, TopicPartition
from streams_rt.state import StateDirectory, StateDirectoryLockedError, StatePathError, TaskLockedError
from streams_rt.state.config import StateConfig
from tests.state.conftest import Children, wait_for_line


def test_layout_and_stable_process_id(tmp_path: Path) -> None:
    with StateDirectory(tmp_path, "app") as directory:
        first = directory.process_id
        assert directory.task_dir(TaskId(1, 3)) == tmp_path / "app" / "1_3"
        assert directory.task_dir(TaskId(0, 2, "named")) == tmp_path / "app" / "named__0_2"
        assert (tmp_path / "app" / ".lock").exists()
        metadata = json.loads((tmp_path / "app" / "kafka-streams-process-metadata").read_text())
        assert metadata["processId"] == str(first)
    with StateDirectory(tmp_path, "app") as directory:
        assert directory.process_id == first  # the ClientUUID survives a restart


def test_unreadable_process_metadata_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "kafka-streams-process-metadata").write_text("{not json")
    with StateDirectory(tmp_path, "app") as directory:
        again = json.loads((tmp_path / "app" / "kafka-streams-process-metadata").read_text())
        assert again["processId"] == str(directory.process_id)


def test_default_state_dir_is_under_tmp() -> None:
    config = StateConfig.from_properties({"application.id": "a", "bootstrap.servers": "x:1"})
    assert config.state_dir == default_state_dir()
    assert StateConfig.from_properties(
        {"application.id": "a", "bootstrap.servers": "x:1", "state.dir": "/s", "state.cleanup.delay.ms": "5"}
    ).state_cleanup_delay_ms == 5


def test_config_opens_its_directory_with_the_cleanup_delay(tmp_path: Path) -> None:
    config = StateConfig.from_properties({
        "application.id": "a", "bootstrap.servers": "x:1", "state.dir": str(tmp_path), "state.cleanup.delay.ms": "5",
    })
    with config.open_state_directory() as directory:
        assert directory.root == tmp_path / "a" and directory.cleanup_delay_ms == 5
        with directory.lock_task(TaskId(0, 0)):
            pass
        assert directory.clean_removed_tasks(owned=[], now_ms=time.time() * 1000 + 1_000) == [TaskId(0, 0)]


def test_task_lock_is_exclusive_within_a_process(tmp_path: Path) -> None:
    with StateDirectory(tmp_path, "app") as directory:
        with directory.lock_task(TaskId(0, 0)):
            with pytest.raises(TaskLockedError) as info:
                directory.lock_task(TaskId(0, 0))
            assert info.value.holder_pid == os.getpid()
        directory.lock_task(TaskId(0, 0)).release()  # free again


def test_application_lock_contention_between_processes(tmp_path: Path, children: Children) -> None:
    child = children.start("hold-task", json.dumps(
        {"state_dir": str(tmp_path), "app_id": "app", "task": "0_1", "app_lock": True}))
    wait_for_line(child, "LOCKED")
    with pytest.raises(StateDirectoryLockedError) as info:
        StateDirectory(tmp_path, "app")
    assert info.value.holder_pid == child.pid
    assert str(child.pid) in str(info.value)
    child.send_signal(signal.SIGKILL)
    child.wait()
    StateDirectory(tmp_path, "app").close()  # the kernel released the dead holder's lock


def test_task_lock_contention_between_processes(tmp_path: Path, children: Children) -> None:
    child = children.start("hold-task", json.dumps(
        {"state_dir": str(tmp_path), "app_id": "app", "task": "0_1", "app_lock": False}))
    wait_for_line(child, "LOCKED")
    with StateDirectory(tmp_path, "app", lock_application=False) as directory:
        with pytest.raises(TaskLockedError) as info:
            directory.lock_task(TaskId(0, 1))
        assert info.value.task == "0_1" and info.value.holder_pid == child.pid
        assert f"task 0_1 is locked by pid {child.pid}" in str(info.value)
        directory.lock_task(TaskId(0, 2)).release()  # other tasks are free
        child.send_signal(signal.SIGKILL)
        child.wait()
        directory.lock_task(TaskId(0, 1)).release()


def test_offset_sums_cover_every_task_directory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with StateDirectory(tmp_path, "app") as directory:
        directory.checkpoint_for(TaskId(0, 0)).path.parent.mkdir()
        directory.task_dir(TaskId(0, 1))
        directory.task_dir(TaskId(0, 2))
        directory.task_dir(TaskId(0, 3))
        directory.checkpoint_for(TaskId(0, 1)).write({TopicPartition("a", 1): 10, TopicPartition("b", 1): 5})
        directory.checkpoint_for(TaskId(0, 2)).write({TopicPartition("a", 2): 3})
        directory.checkpoint_for(TaskId(0, 3)).path.write_text("0\n3\na 3 1\n")  # corrupt
        (tmp_path / "app" / "not-a-task").mkdir()
        sums = directory.task_offset_sums(running_active=[TaskId(0, 2), TaskId(1, 0)])
        running = OFFSET_SUM_RUNNING_ACTIVE
        assert sums == {TaskId(0, 1): 15, TaskId(0, 2): running, TaskId(1, 0): running}
        assert "task 0_3: offset sum not reported" in caplog.text


def test_cleanup_removes_only_old_unowned_unlocked_tasks(tmp_path: Path) -> None:
    with StateDirectory(tmp_path, "app", cleanup_delay_ms=60_000) as directory:
        for p in range(4):
            directory.checkpoint_for(TaskId(0, p)).path.parent.mkdir()
            directory.checkpoint_for(TaskId(0, p)).write({TopicPartition("t", p): p})
        locked = directory.lock_task(TaskId(0, 2))
        now_ms = time.time() * 1000
        assert directory.clean_removed_tasks(owned=[TaskId(0, 0)], now_ms=now_ms) == []  # too recent
        later = now_ms + 120_000
        assert directory.clean_removed_tasks(owned=[TaskId(0, 0)], now_ms=later) == [TaskId(0, 1), TaskId(0, 3)]
        assert directory.tasks_on_disk() == [TaskId(0, 0), TaskId(0, 2)]
        locked.release()
        # Releasing touched the directory: its cleanup delay starts again.
        assert directory.clean_removed_tasks(owned=[], now_ms=time.time() * 1000 + 30_000) == []
        assert directory.task_offset_sums() == {TaskId(0, 0): 0, TaskId(0, 2): 2}


def test_a_file_where_a_task_directory_must_be_is_a_path_error(tmp_path: Path) -> None:
    with StateDirectory(tmp_path, "app") as directory:
        (tmp_path / "app" / "0_1").write_text("in the way")
        with pytest.raises(StatePathError) as caught:
            directory.lock_task(TaskId(0, 1))
        assert caught.value.path == tmp_path / "app" / "0_1"


@pytest.mark.timeout(30)  # nothing may block on a FIFO: the timeout interrupts a blocking open and fails
def test_special_files_in_the_state_directory_block_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "app"
    (root / "0_1").mkdir(parents=True)
    os.mkfifo(root / "kafka-streams-process-metadata")
    os.mkfifo(root / "0_1" / ".checkpoint")
    (root / "0_2").mkdir()
    os.mkfifo(root / "0_2" / ".lock")
    with StateDirectory(tmp_path, "app") as directory:  # metadata unreadable: a new id, logged
        assert "is a FIFO" in caplog.text
        assert directory.task_offset_sums() == {}  # the FIFO checkpoint is left out, logged
        assert "task 0_1: offset sum not reported" in caplog.text
        with pytest.raises(StatePathError, match="is a FIFO, where a lock file must be"):
            directory.lock_task(TaskId(0, 2))
