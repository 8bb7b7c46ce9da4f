"""Placing tasks on clients that hold their state, as many as the room allows.

The general path (active_placement.py) gives a task it has to place to a client holding its state
before any other: a caught-up one needs no warm-up, one with some of the state restores less. Taken
greedily in fill order, a task can take the last room of a holder that another task needed, while a
holder of its own had room too: the other task then goes elsewhere, cold. Round after round that
moves a pending task's target away from the client that warmed up for it (a warm-up and a probing
round for nothing). So a task no holder has room for looks for an augmenting path: a holder gives up
a task placed here for it, which goes to a holder of its own with room, or gives up another in turn.
Only tasks this fill placed move, each to a holder of its own, so the count of tasks on holders only
grows, and the result does not depend on the order in which tasks happened to be filled."""

from __future__ import annotations

from collections.abc import Callable, Sequence


class HolderFill:
    """One fill: `holders(t)` are the clients that may take task t, in preference order; `room(t, c)`
    says whether client c has room for it (its quota, and its target of t's subtopology); `same_kind(t,
    c)` whether c's room for t is short in t's subtopology (only a task of the same subtopology can then
    make room); `place(t, c)` and `remove(t, c)` update the caller's counts."""

    def __init__(
        self,
        holders: Callable[[int], Sequence[int]],
        room: Callable[[int, int], bool],
        same_kind: Callable[[int, int], bool],
        subtopology: Sequence[int],
        place: Callable[[int, int], None],
        remove: Callable[[int, int], None],
    ) -> None:
        self.holders, self.room, self.same_kind, self.subtopology = holders, room, same_kind, subtopology
        self._place, self._remove = place, remove
        self.where: dict[int, int] = {}
        self._at: dict[int, list[int]] = {}

    def fill(self, tasks: Sequence[int]) -> list[int]:
        """Places what it can of `tasks` (in order, then by augmenting paths); returns the others."""
        left = []
        for t in tasks:
            c = next((c for c in self.holders(t) if self.room(t, c)), None)
            if c is None:
                left.append(t)
            else:
                self._put(t, c)
        return [t for t in left if not self._augment(t)]

    def _put(self, t: int, c: int) -> None:
        self._place(t, c)
        self.where[t] = c
        self._at.setdefault(c, []).append(t)

    def _augment(self, task: int) -> bool:
        """Breadth first from `task`: came_from[b] = (x, c): x takes client c, which b leaves."""
        came_from: dict[int, tuple[int, int] | None] = {task: None}
        opened: set[tuple[int, int | None]] = set()  # (client, subtopology or None for any) explored
        frontier = [task]
        while frontier:
            later = []
            for x in frontier:
                for c in self.holders(x):
                    if self.where.get(x) == c:
                        continue
                    if self.room(x, c):
                        self._apply(x, c, came_from)
                        return True
                    kind = self.subtopology[x] if self.same_kind(x, c) else None
                    if (c, kind) in opened or (c, None) in opened:
                        continue
                    opened.add((c, kind))
                    for b in self._at.get(c, ()):
                        if b not in came_from and (kind is None or self.subtopology[b] == kind):
                            came_from[b] = (x, c)
                            later.append(b)
            frontier = later
        return False

    def _apply(self, x: int, c: int, came_from: dict[int, tuple[int, int] | None]) -> None:
        """x takes client c (which has room), and each task along the path the client the next one left."""
        while True:
            was = self.where.get(x)
            if was is not None:
                self._remove(x, was)
                self._at[was].remove(x)
            self._put(x, c)
            link = came_from[x]
            if link is None:
                return
            x, c = link
