"""The on-disk layout `<state.dir>/<application.id>/<task>/`, its locks and its housekeeping.

As in Kafka's StateDirectory: an application-level `.lock` (two instances must not share a state
directory), a `kafka-streams-process-metadata` file holding the process UUID (stable across restarts:
it is the ClientUUID in subscriptions), one directory per task with its own `.lock`, offset sums read
from the checkpoints of every task directory on disk, and removal of unowned task directories once
they are older than `state.cleanup.delay.ms`. Locks are `flock`s, so a killed process releases them.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import stat
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from streams_rt.atomic_file import atomic_write_bytes
from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, TaskId
from streams_rt.state.checkpoint import CHECKPOINT_FILE, OffsetCheckpoint, offset_sum
from streams_rt.state.errors import CorruptCheckpoint, StateDirectoryLockedError, StatePathError, TaskLockedError
from streams_rt.state.paths import ensure_directory, file_kind, read_regular_file

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
PROCESS_FILE = "kafka-streams-process-metadata"


def _try_flock(path: Path) -> IO[str] | None:
    """An open, exclusively locked file with our pid in it, or None when someone else holds it.
    StatePathError if the path is no regular file (checked on the open descriptor; the open does not
    block on a FIFO) or cannot be opened."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise StatePathError(path, exc.strerror or str(exc)) from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StatePathError(path, f"is a {file_kind(mode)}, where a lock file must be")
    handle = open(fd, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def _holder_pid(path: Path) -> int | None:
    try:
        return int(read_regular_file(path).decode().strip())
    except (OSError, StatePathError, ValueError):
        return None


class TaskLock:
    """An exclusive lock on one task directory; releasing it marks the directory as recently used."""

    def __init__(self, task: TaskId, directory: Path, handle: IO[str]) -> None:
        self.task, self.directory = task, directory
        self._handle: IO[str] | None = handle

    def release(self, touch: bool = True) -> None:
        """Unlock; `touch` restarts the cleanup delay, which counts from the task's last use."""
        if self._handle is None:
            return
        if touch and self.directory.exists():
            os.utime(self.directory)
        fcntl.flock(self._handle, fcntl.LOCK_UN)
        self._handle.close()
        self._handle = None

    def __enter__(self) -> TaskLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class StateDirectory:
    """One application's state directory, owned by this process while open."""

    def __init__(
        self,
        state_dir: Path | str,
        application_id: str,
        cleanup_delay_ms: int = 600_000,
        lock_application: bool = True,
    ) -> None:
        """`lock_application=False` is for processes that share the directory with a host (a
        successor starting while an orphan exits, operator tools): task locks still apply."""
        self.root = ensure_directory(Path(state_dir) / application_id, mode=0o700)
        self.cleanup_delay_ms = cleanup_delay_ms
        self._app_lock: IO[str] | None = None
        if lock_application:
            lock_path = self.root / LOCK_FILE
            self._app_lock = _try_flock(lock_path)
            if self._app_lock is None:
                raise StateDirectoryLockedError(self.root, _holder_pid(lock_path))
        self.process_id = self._load_process_id()

    def _load_process_id(self) -> uuid.UUID:
        path = self.root / PROCESS_FILE
        try:
            return uuid.UUID(json.loads(read_regular_file(path))["processId"])
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError, StatePathError) as exc:
            log.warning("process metadata %s is unreadable (%s); a new process id is generated", path, exc)
        process_id = uuid.uuid4()
        try:
            atomic_write_bytes(path, json.dumps({"processId": str(process_id), "version": 1}).encode())
        except OSError as exc:
            raise StatePathError(path, exc.strerror or str(exc)) from exc
        return process_id

    def task_dir(self, task: TaskId) -> Path:
        """The task's directory, created if missing (StatePathError if something else is there)."""
        return ensure_directory(self.root / str(task))

    def checkpoint_for(self, task: TaskId) -> OffsetCheckpoint:
        return OffsetCheckpoint(self.root / str(task) / CHECKPOINT_FILE)

    def lock_task(self, task: TaskId) -> TaskLock:
        """Exclusive across processes (and across opens within one): TaskLockedError names the holder."""
        directory = self.task_dir(task)
        lock_path = directory / LOCK_FILE
        handle = _try_flock(lock_path)
        if handle is None:
            raise TaskLockedError(str(task), directory, _holder_pid(lock_path))
        return TaskLock(task, directory, handle)

    def tasks_on_disk(self) -> list[TaskId]:
        """Every task directory present, owned or not, in Kafka's task order."""
        tasks = []
        for entry in self.root.iterdir():
            if entry.is_dir():
                try:
                    tasks.append(TaskId.parse(entry.name))
                except ValueError:
                    continue
        return sorted(tasks)

    def task_offset_sums(self, running_active: Iterable[TaskId] = ()) -> dict[TaskId, int]:
        """The subscription's task offset sums: the checkpointed sum for every task directory on disk,
        OFFSET_SUM_RUNNING_ACTIVE for tasks running as active here. A task without a checkpoint is left
        out, one whose checkpoint is unreadable too (with a warning), as Kafka's TaskManager does."""
        sums = {task: OFFSET_SUM_RUNNING_ACTIVE for task in running_active}
        for task in self.tasks_on_disk():
            if task in sums:
                continue
            checkpoint = self.checkpoint_for(task)
            try:
                if checkpoint.exists():
                    sums[task] = offset_sum(checkpoint.read())
            except (CorruptCheckpoint, OSError) as exc:
                log.warning("task %s: offset sum not reported: %s", task, exc)
        return sums

    def clean_removed_tasks(self, owned: Iterable[TaskId], now_ms: float | None = None) -> list[TaskId]:
        """Delete directories of unowned, unlocked tasks unused for longer than state.cleanup.delay.ms."""
        owned = set(owned)
        now_ms = time.time() * 1000 if now_ms is None else now_ms
        removed = []
        for task in self.tasks_on_disk():
            if task in owned:
                continue
            directory = self.root / str(task)
            try:
                lock = self.lock_task(task)
            except TaskLockedError:
                continue
            try:
                if now_ms - directory.stat().st_mtime * 1000 <= self.cleanup_delay_ms:
                    continue
                log.info("deleting state of task %s: unowned for more than %d ms", task, self.cleanup_delay_ms)
                shutil.rmtree(directory)  # while locked: nobody opens the stores meanwhile
                removed.append(task)
            finally:
                lock.release(touch=False)
        return removed

    def close(self) -> None:
        if self._app_lock is not None:
            fcntl.flock(self._app_lock, fcntl.LOCK_UN)
            self._app_lock.close()
            self._app_lock = None

    def __enter__(self) -> StateDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
