"""Computes rebalance rounds on their own thread, off the group lock: a large round (hundreds of
members, megabytes of subscriptions) then never stalls heartbeats, syncs or describe. The round is
computed from the group's frozen `PendingRound` and applied under the lock only if no membership
change superseded it meanwhile (the change that superseded it notifies the runner of the next one)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from streams_rt.coordinator.group import Group, RoundAssigner, run_round
from streams_rt.coordinator.worker import Worker


class RoundRunner(Worker):
    def __init__(
        self,
        group: Group,
        lock: threading.Condition,
        assigner: RoundAssigner,
        clock: Callable[[], int],
        applied: Callable[[], None],
    ) -> None:
        """`lock` guards `group`; `applied()` runs under it after a round is applied (to wake the
        waiting syncs and the saver). Notify it when the group may have a round to compute."""
        super().__init__("coordinator-rounds")
        self._group, self._lock, self._assigner, self._clock = group, lock, assigner, clock
        self._applied = applied
        self._computed = 0  # the number of the last round computed
        self.start()

    def work(self) -> None:
        with self._lock:
            pending = self._group.pending_round()
        if pending is None or pending.number == self._computed:
            return
        self._computed = pending.number
        outcome = run_round(self._assigner, pending)
        with self._lock:
            if self._group.complete_round(pending, outcome, self._clock()):
                self._applied()
