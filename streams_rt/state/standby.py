"""Standby updater: keeps a task's stores a changelog-tail behind the active, reports its offset sum
and lag (the subscription's task offset sums), checkpoints periodically, and is promoted in place."""

from __future__ import annotations

import time
from collections.abc import Callable

from streams_rt.state.task_state import TaskState


class StandbyUpdater:
    def __init__(self, state: TaskState, clock: Callable[[], float] = time.monotonic) -> None:
        self.state = state
        self._clock = clock
        self._interval_s = state.config.commit_interval_ms / 1000
        self._last_checkpoint = 0.0
        self._dirty = False

    def open(self) -> None:
        self.state.open_standby()
        self._last_checkpoint = self._clock()

    def poll(self, timeout_s: float = 0.1) -> int:
        """Apply what has arrived; checkpoint once per commit.interval.ms. Returns records applied."""
        applied = self.state.update(timeout_s)
        self._dirty = self._dirty or applied > 0
        if self._dirty and self._clock() - self._last_checkpoint >= self._interval_s:
            self.state.checkpoint()
            self._last_checkpoint = self._clock()
            self._dirty = False
        return applied

    def offset_sum(self) -> int:
        return self.state.offset_sum()

    def lag(self) -> int:
        return self.state.lag()

    def promote(self) -> TaskState:
        """The task becomes active here; what was applied is kept, only the tail is read."""
        self.state.promote()
        return self.state

    def close(self) -> None:
        self.state.close(clean=True)
