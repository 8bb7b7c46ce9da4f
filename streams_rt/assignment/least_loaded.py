"""Clients by load, least loaded first: our counterpart of Kafka's ConstrainedPrioritySet.

Load is tasks per capacity unit, read from a list the caller keeps current; ties go to the lower client
number (process-id order), so every leader picks the same client. Entries are updated lazily: a client
whose load changed since it was offered is re-keyed when it reaches the top, so a poll costs
O(log clients) and nobody scans all clients per task. With `limit`, a client whose load has reached its
limit leaves the set for good (the placement loops only ever add load).

As with Kafka's class, a client is taken out by `poll`/`take` and offered back by the caller once its
load is updated; a client still in the set may gain load meanwhile (it is re-keyed when it surfaces).
Offer only clients that are not in the set: each client has at most one entry."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Container, Iterable, Sequence

_NOTHING: frozenset[int] = frozenset()


class LeastLoaded:
    __slots__ = ("_heap", "_load", "_capacities", "_limit")

    def __init__(
        self,
        clients: Iterable[int],
        load: Sequence[int],
        capacities: Sequence[int],
        limit: Sequence[int] | None = None,
    ) -> None:
        self._load = load
        self._capacities = capacities
        self._limit = limit
        self._heap = [(load[c] / capacities[c], c) for c in clients]
        heapq.heapify(self._heap)

    def __bool__(self) -> bool:
        """False once every client has been taken out or found full."""
        return bool(self._heap)

    def offer(self, c: int) -> None:
        """Puts client c (taken out earlier) back at its current load."""
        heapq.heappush(self._heap, (self._load[c] / self._capacities[c], c))

    def poll(self, excluded: Container[int] = _NOTHING, accept: Callable[[int], bool] | None = None) -> int | None:
        """Removes and returns the least loaded client not in `excluded` that `accept` admits (None: no
        such client). Clients passed over stay in the set."""
        heap, load, capacities, limit = self._heap, self._load, self._capacities, self._limit
        heappop, heappush = heapq.heappop, heapq.heappush
        passed: list[tuple[float, int]] = []
        found = None
        while heap:
            key, c = heappop(heap)
            if limit is not None and load[c] >= limit[c]:
                continue  # full: gone for good
            current = load[c] / capacities[c]
            if key != current:
                heappush(heap, (current, c))
            elif c in excluded or (accept is not None and not accept(c)):
                passed.append((key, c))
            else:
                found = c
                break
        for entry in passed:
            heappush(heap, entry)
        return found

    def take(self, count: int, excluded: Container[int] = _NOTHING) -> list[int]:
        """Removes and returns up to `count` clients, least loaded first, not in `excluded`; the caller
        offers them again once it has added their load. One call per task rather than one per pick:
        this runs once per standby replica."""
        heap, load, capacities, limit = self._heap, self._load, self._capacities, self._limit
        heappop, heappush = heapq.heappop, heapq.heappush
        found: list[int] = []
        passed: list[tuple[float, int]] = []
        while heap and len(found) < count:
            key, c = heappop(heap)
            if limit is not None and load[c] >= limit[c]:
                continue
            current = load[c] / capacities[c]
            if key != current:
                heappush(heap, (current, c))
            elif c in excluded:
                passed.append((key, c))
            else:
                found.append(c)
        for entry in passed:
            heappush(heap, entry)
        return found
