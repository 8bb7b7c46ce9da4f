"""Which clients may run the ceil of their share of which subtopology, dealt one client at a time.

Client c's share of subtopology g is size(g) x capacity(c) / total capacity; it runs the floor or the
ceil (spread.py). Subtopology g has size(g) minus the floors to hand out as ceils, at most one per
client whose share is fractional. Not every count per client is possible: two clients wanting two
ceils each where one subtopology hands out three and another one cannot both get them. `add` gives a
client one more ceil along an augmenting path (another client may trade a ceil for another one), and
refuses when no dealing could: whether a count is possible does not depend on the order clients were
added in (a matching), so a greedy fill that skips refused clients reaches the largest total."""

from __future__ import annotations

from collections.abc import Sequence


class CeilMatching:
    __slots__ = ("floors", "_eligible", "_free", "_holders", "_taken")

    def __init__(self, sizes: Sequence[int], capacities: Sequence[int]) -> None:
        total = sum(capacities)
        self.floors = [sum(size * cap // total for size in sizes) for cap in capacities]
        self._eligible = [[g for g, size in enumerate(sizes) if size * cap % total] for cap in capacities]
        self._free = [size - sum(size * cap // total for cap in capacities) for size in sizes]
        self._holders: list[set[int]] = [set() for _ in sizes]
        self._taken: list[set[int]] = [set() for _ in capacities]

    def add(self, c: int) -> bool:
        """One more ceil for client c; False (nothing changed) when no dealing allows it."""
        taken, holders, eligible, free = self._taken, self._holders, self._eligible, self._free
        # Breadth first over subtopologies: via[g] = (client taking g, subtopology it gives up for g).
        via: dict[int, tuple[int, int | None]] = {g: (c, None) for g in eligible[c] if g not in taken[c]}
        frontier = list(via)
        while frontier:
            later: list[int] = []
            for g in frontier:
                if free[g]:
                    free[g] -= 1
                    at: int | None = g
                    while at is not None:
                        client, gives_up = via[at]
                        holders[at].add(client)
                        taken[client].add(at)
                        if gives_up is not None:
                            holders[gives_up].discard(client)
                            taken[client].discard(gives_up)
                        at = gives_up
                    return True
                for d in holders[g]:
                    for g2 in eligible[d]:
                        if g2 not in via and g2 not in taken[d]:
                            via[g2] = (d, g)
                            later.append(g2)
            frontier = later
        return False
