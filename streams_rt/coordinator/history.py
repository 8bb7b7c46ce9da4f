"""The last rebalances as an operator reads them: when each generation formed, why its round
started, how long it took and which tasks moved between which members. Pure: the coordinator hands
in the assignments and the times; the status page, `streams-rt status` and the log read it back."""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streams_rt.assignment import ClientAssignment
from streams_rt.protocol import TaskId

ACTIVE, STANDBY, WARMUP = "active", "standby", "warmup"
UUID_LENGTH = 36


def short_member_id(member_id: str) -> str:
    """`member-1a2b3c4d` for `member-1a2b3c4d-...` (the coordinator makes ids as `<prefix>-<uuid4>`):
    short enough for a table, still unique in practice."""
    if len(member_id) > UUID_LENGTH and member_id[-UUID_LENGTH - 1] == "-":
        return member_id[: -UUID_LENGTH + 8]
    return member_id


@dataclass(frozen=True)
class TaskMove:
    """One replica of a task placed or taken away: `source` None means newly placed, `target` None
    means dropped (its member left, or the assignor no longer wants it there)."""

    task: TaskId
    kind: str  # active, standby or warmup
    source: str | None
    target: str | None

    def to_json(self) -> dict[str, Any]:
        """Members by their short ids (as the status page and `streams-rt status` name hosts)."""
        return {"task": str(self.task), "kind": self.kind,
                "from": None if self.source is None else short_member_id(self.source),
                "to": None if self.target is None else short_member_id(self.target)}

    def __str__(self) -> str:
        return f"{self.task} {self.kind} {_name(self.source)}->{_name(self.target)}"


def _name(member_id: str | None) -> str:
    return "none" if member_id is None else short_member_id(member_id)


def task_moves(before: Mapping[str, ClientAssignment], after: Mapping[str, ClientAssignment]) -> list[TaskMove]:
    """What changed between two generations' assignments (member id -> tasks), in task order: an
    active task whose owner changed is one move; a standby or warm-up replica placed or dropped is
    one move each."""
    moves: list[TaskMove] = []
    for kind in (ACTIVE, STANDBY, WARMUP):
        old, new = _holders(before, kind), _holders(after, kind)
        for task in sorted(old.keys() | new.keys()):
            was, now = old.get(task, frozenset()), new.get(task, frozenset())
            if kind == ACTIVE:
                if was != now:
                    moves.append(TaskMove(task, kind, min(was, default=None), min(now, default=None)))
                continue
            moves += [TaskMove(task, kind, member, None) for member in sorted(was - now)]
            moves += [TaskMove(task, kind, None, member) for member in sorted(now - was)]
    return sorted(moves, key=lambda m: (m.task, m.kind))


def _holders(assignments: Mapping[str, ClientAssignment], kind: str) -> dict[TaskId, frozenset[str]]:
    out: dict[TaskId, set[str]] = {}
    for member, a in assignments.items():
        tasks: Iterable[TaskId] = a.active if kind == ACTIVE else a.warmup if kind == WARMUP else a.standby - a.warmup
        for task in tasks:
            out.setdefault(task, set()).add(member)
    return {task: frozenset(members) for task, members in out.items()}


@dataclass(frozen=True)
class RebalanceEvent:
    """One generation formed. Times are epoch milliseconds (for people); `started_ms` is when the
    round that made it started collecting members."""

    generation: int
    protocol: str
    reason: str
    started_ms: int
    formed_ms: int
    members: int
    moves: tuple[TaskMove, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation, "protocol": self.protocol, "reason": self.reason,
            "started_ms": self.started_ms, "formed_ms": self.formed_ms,
            "duration_ms": self.formed_ms - self.started_ms, "members": self.members,
            "moves": [m.to_json() for m in self.moves],
        }


class RebalanceHistory:
    """The last `capacity` generations and the assignment of the newest, to diff the next against."""

    def __init__(self, capacity: int = 50) -> None:
        self._events: collections.deque[RebalanceEvent] = collections.deque(maxlen=capacity)
        self._last: dict[str, ClientAssignment] = {}

    def generation_formed(
        self, *, generation: int, protocol: str, reason: str, started_ms: int, formed_ms: int,
        assignments: Mapping[str, ClientAssignment],
    ) -> RebalanceEvent:
        event = RebalanceEvent(generation, protocol, reason, started_ms, formed_ms, len(assignments),
                               tuple(task_moves(self._last, assignments)))
        self._last = dict(assignments)
        self._events.append(event)
        return event

    def events(self) -> list[RebalanceEvent]:
        """Oldest first."""
        return list(self._events)
