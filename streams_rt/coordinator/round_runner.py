"""Computes rebalance rounds on their own thread, off the group lock: a large round (hundreds of
members, megabytes of subscriptions) then never stalls heartbeats, syncs or describe. The round is
computed from the group's frozen `PendingRound` and applied under the lock only if no membership
change superseded it meanwhile (the change that superseded it notifies the runner of the next one).
A superseded round stops at the assigner's next step (`SupersededCheck`) rather than run to its end."""

from __future__ import annotations

import threading
from collections.abc import Callable

from streams_rt.coordinator.group import Group, PendingRound, RoundAssigner, RoundSuperseded, run_round
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
            if self._group.pending_number in (None, self._computed):
                return
            pending = self._group.pending_round()
        assert pending is not None
        self._computed = pending.number
        outcome = run_round(self._assigner, pending, lambda: self._check(pending))
        if outcome is None:
            return  # superseded: the change that did it has notified this runner of the next round
        with self._lock:
            if self._group.complete_round(pending, outcome, self._clock()):
                self._applied()

    def _check(self, pending: PendingRound) -> None:
        """Between the assigner's steps: stop if the group moved on (or the coordinator closes)."""
        with self._lock:
            if self._group.pending_number != pending.number or self.closing:
                raise RoundSuperseded()
