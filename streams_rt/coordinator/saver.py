"""Saves the group's record on its own thread, off the group lock: a slow or down broker then
delays only the delivery of a new generation (its syncs answer "not ready"), never the heartbeats
or the other calls. Failures are retried with exponential back-off and logged once per change of
state (the first failure, then the recovery), not once per attempt."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from streams_rt.coordinator.group import Group
from streams_rt.coordinator.group_record import GroupRecord
from streams_rt.coordinator.worker import Worker

log = logging.getLogger(__name__)


class RecordSaver(Worker):
    def __init__(
        self,
        group: Group,
        lock: threading.Condition,
        save: Callable[[GroupRecord], None],
        *,
        first_backoff_s: float = 0.05,
        max_backoff_s: float = 5.0,
        pause: Callable[[float], object] | None = None,
    ) -> None:
        """`lock` guards `group`; it is notified after each save so waiting syncs look again.
        `pause(seconds)` waits between failed attempts (tests record the back-off with it). Notify
        the saver when the group may have something new to save."""
        super().__init__("coordinator-saver")
        self._group, self._lock, self._save = group, lock, save
        self._first_backoff_s, self._max_backoff_s = first_backoff_s, max_backoff_s
        self._backoff = first_backoff_s
        self._pause = pause or self._stopping.wait
        self.failing = False
        self.start()

    def work(self) -> None:
        with self._lock:
            pending = self._group.unsaved()
        if pending is None:
            return
        changes, record = pending
        try:
            self._save(record)
        except Exception:
            if not self.failing:
                log.exception(
                    "group %s: could not save generation %d; its members wait, retrying with back-off up to %.0f s",
                    self._group.group_id, record.generation, self._max_backoff_s,
                )
                self.failing = True
            self._pause(self._backoff)
            self._backoff = min(self._backoff * 2, self._max_backoff_s)
            self.notify()
            return
        if self.failing:
            log.warning("group %s: saving works again (generation %d saved)", self._group.group_id, record.generation)
            self.failing = False
        self._backoff = self._first_backoff_s
        with self._lock:
            self._group.saved(changes, record.generation)
            self._lock.notify_all()
            if self._group.has_unsaved:
                self.notify()
