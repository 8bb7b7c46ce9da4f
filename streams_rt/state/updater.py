"""Drives a host's shared ChangelogReader: restores active tasks, keeps standbys current, and
checkpoints each standby once per `commit.interval.ms` when it applied records. A host's state
thread calls `poll` in a loop; tests call it directly. The time is passed in."""

from __future__ import annotations

from streams_rt.protocol import TaskId
from streams_rt.state.changelog_reader import ChangelogReader
from streams_rt.state.task_state import Mode, TaskState, TaskStateError


class StateUpdater:
    def __init__(self, reader: ChangelogReader, commit_interval_ms: int) -> None:
        self.reader = reader
        self._interval_ms = commit_interval_ms
        self._standbys: dict[TaskId, TaskState] = {}
        self._last_checkpoint_ms: dict[TaskId, int] = {}
        self._dirty: set[TaskId] = set()

    def add_standby(self, state: TaskState, now_ms: int) -> None:
        """An opened standby whose checkpoints this updater keeps."""
        if state.mode is not Mode.STANDBY:
            raise TaskStateError(state.task, "be updated as a standby", state.mode)
        self._standbys[state.task] = state
        self._last_checkpoint_ms[state.task] = now_ms

    def remove_standby(self, task: TaskId) -> None:
        """Before the standby is promoted or closed (either checkpoints it)."""
        self._standbys.pop(task, None)
        self._last_checkpoint_ms.pop(task, None)
        self._dirty.discard(task)

    def poll(self, now_ms: int, timeout_s: float = 0.1) -> dict[TaskId, int]:
        """Apply what arrived (completing restores) and checkpoint standbys that are due; returns
        the records applied per task."""
        applied = self.reader.poll(timeout_s)
        self._dirty.update(task for task in applied if task in self._standbys)
        for task in list(self._dirty):
            if now_ms - self._last_checkpoint_ms[task] >= self._interval_ms:
                self._standbys[task].checkpoint()
                self._last_checkpoint_ms[task] = now_ms
                self._dirty.discard(task)
        return applied
