"""Kafka's criterion for balancing tasks over threads (HighAvailabilityTaskAssignor's
balanceTasksOverThreads and shouldMoveATask), on counts: the tolerance within which the stateful quotas
(quotas.py) may trade the threads' evenness for the standbys'."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction


def kafka_leaves(counts: Sequence[int], capacities: Sequence[int]) -> bool:
    """Whether Kafka's criterion (balanceTasksOverThreads' shouldMoveATask) moves no task: no client
    would, with one more, run at most what another runs per thread with one fewer."""
    return min(Fraction(q + 1, cap) for q, cap in zip(counts, capacities, strict=True)) > max(
        Fraction(q - 1, cap) for q, cap in zip(counts, capacities, strict=True))


def kafka_counts(n_tasks: int, capacities: Sequence[int], stateless: int = 0) -> list[int]:
    """The counts Kafka's assignor gives the actives: the n_tasks stateful ones dealt round robin in
    client order, then moved one at a time, from each client to each other in that order, while
    shouldMoveATask holds (the giver, with one fewer, still runs at least what the taker runs per
    thread with one more), until a pass moves nothing (per pass O(clients^2)); then the `stateless`
    ones one at a time to the least loaded client per thread, the first in client order among equals."""
    n = len(capacities)
    counts = [n_tasks // n + (c < n_tasks % n) for c in range(n)]

    def should_move(s: int, d: int) -> bool:
        return (counts[s] * capacities[d] > counts[d] * capacities[s]
                and (counts[s] - 1) * capacities[d] >= (counts[d] + 1) * capacities[s])

    moved = True
    while moved:
        moved = False
        for s in range(n):
            for d in range(n):
                while s != d and should_move(s, d):
                    counts[s] -= 1
                    counts[d] += 1
                    moved = True
    for _ in range(stateless):
        c = min(range(n), key=lambda c: (Fraction(counts[c], capacities[c]), c))
        counts[c] += 1
    return counts
