"""Deferred imbalance resolution (the article's design II, `scheduled.rebalance.max.delay.ms`):
when a client leaves, its tasks that have a caught-up standby elsewhere move at once; the others may
wait up to the delay for the client to come back, so its local state is not rebuilt elsewhere for
a short absence. Pure: the planner feeds it each round's clients and `now_ms`."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from streams_rt.protocol import TaskId

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Departure:
    process_id: uuid.UUID
    tasks: frozenset[TaskId]  # active tasks it held when it left
    deadline_ms: int


class DepartureTracker:
    def __init__(self, max_delay_ms: int) -> None:
        self.max_delay_ms = max_delay_ms
        self._last_active: dict[uuid.UUID, frozenset[TaskId]] = {}
        self._pending: dict[uuid.UUID, Departure] = {}

    def held_tasks(
        self, present: Collection[uuid.UUID], caught_up_elsewhere: Callable[[TaskId], bool], now_ms: int
    ) -> frozenset[TaskId]:
        """Tasks to leave unassigned this round: those of clients that left within the delay and
        that no present client could take over without restoring."""
        present_set = set(present)
        for pid, tasks in self._last_active.items():
            if pid not in present_set and pid not in self._pending and tasks and self.max_delay_ms > 0:
                self._pending[pid] = Departure(pid, tasks, now_ms + self.max_delay_ms)
        for pid in list(self._pending):
            d = self._pending[pid]
            if pid in present_set:
                log.info("client %s came back; its tasks are assigned normally", pid)
                del self._pending[pid]
            elif now_ms >= d.deadline_ms:
                log.info("client %s did not come back within %d ms; its tasks move", pid, self.max_delay_ms)
                del self._pending[pid]
        held: set[TaskId] = set()
        for d in self._pending.values():
            waiting = {t for t in d.tasks if not caught_up_elsewhere(t)}
            if waiting:
                log.info(
                    "holding %d task(s) of departed client %s until it returns or %d ms: %s",
                    len(waiting), d.process_id, d.deadline_ms - now_ms, sorted(map(str, waiting)),
                )
            held |= waiting
        return frozenset(held)

    def copy(self) -> DepartureTracker:
        """An independent copy: a round records into one, kept only if the round is applied."""
        other = DepartureTracker(self.max_delay_ms)
        other._last_active, other._pending = dict(self._last_active), dict(self._pending)
        return other

    def next_deadline_ms(self) -> int | None:
        return min((d.deadline_ms for d in self._pending.values()), default=None)

    def record_round(self, active: Mapping[uuid.UUID, frozenset[TaskId]]) -> None:
        """Remember who held what after this round (held tasks stay with their departed owner)."""
        self._last_active = {pid: frozenset(tasks) for pid, tasks in active.items()}
        for pid, d in self._pending.items():
            self._last_active[pid] = d.tasks
