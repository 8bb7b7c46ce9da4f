"""How many tasks of a pool each client should run, and the sticky start of a pool's placement.

Stateful tasks (the first pool), one subtopology: every client gets floor(n * capacity / total) and the
leftover tasks go one each to clients whose share is fractional (so nobody exceeds the ceiling of its
share), first to those owning more than the floor (keeping them costs no move), then the largest
fractional share, then by `RoundInputs.rank` (process id order, or with rack-aware tags small zones
first). With several subtopologies the quotas come out of the subtopology targets (spread.py).

Stateless tasks (placed on top of the stateful ones): what balances the threads is the total, so each
task goes to the client whose load per capacity unit would be lowest with it (water-filling, as
Kafka's least-loaded placement of stateless tasks), ties by rank. Then no stateless task could
move to a client that would run fewer tasks per capacity unit than its giver does now.

Water-filling does not look at who owns what, and the subtopology targets only through claims that
survive a cooperative move's second round: a preference for owners there could change between the two
rounds (a giver shedding crowded tasks owns less than its quota in the second) and move tasks back and
forth. With one subtopology an owner only sheds above its quota, so the preference holds.

`keep_owned`: owners keep their tasks up to the quota and within their target of each subtopology
(spread.py)."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import NamedTuple

from .ownership import NO_OWNER
from .spread import SubtopologyShares


def capacity_quotas(n_tasks: int, capacities: Sequence[int], rank: Sequence[int], owned: Sequence[int]) -> list[int]:
    total = sum(capacities)
    quotas = [n_tasks * cap // total for cap in capacities]
    leftover = n_tasks - sum(quotas)
    if leftover:
        fractional = [c for c in range(len(capacities)) if n_tasks * capacities[c] % total]
        order = sorted(fractional, key=lambda c: (owned[c] <= quotas[c], -(n_tasks * capacities[c] % total), rank[c]))
        for c in order[:leftover]:
            quotas[c] += 1
    return quotas


def filling_quotas(n_tasks: int, capacities: Sequence[int], prior: Sequence[int], rank: Sequence[int]) -> list[int]:
    """Water-filling over `prior` (each client's tasks from earlier pools)."""
    quotas = [0] * len(capacities)
    heap = [((prior[c] + 1) / cap, rank[c], c) for c, cap in enumerate(capacities)]
    heapq.heapify(heap)
    for _ in range(n_tasks):
        _, r, c = heapq.heappop(heap)
        quotas[c] += 1
        heapq.heappush(heap, ((prior[c] + quotas[c] + 1) / capacities[c], r, c))
    return quotas


class Kept(NamedTuple):
    """The sticky start of a pool's placement: `target` mapping each kept task to its owner, `load`
    counting the tasks each client keeps, and `unassigned` (unowned or given up, in no particular
    order: callers sort it)."""

    target: dict[int, int]
    load: list[int]
    unassigned: list[int]


def owned_counts(pool: Sequence[int], owner: Sequence[int], n_clients: int) -> list[int]:
    """How many of the pool's tasks each client owns (counted in C)."""
    counts = Counter(map(owner.__getitem__, pool))
    return list(map(counts.get, range(n_clients), repeat(0)))


def keep_owned(
    pool: Sequence[int],
    owner: Sequence[int],
    quotas: Sequence[int],
    shed_order: Callable[[int], tuple[bool, int]],
    shares: SubtopologyShares | None = None,
) -> Kept:
    """Each owner keeps its tasks of `pool` up to its quota and, with `shares` (started on the pool),
    within its target of each subtopology, so nothing moves that balance does not need; an owner above
    a limit gives up the tasks that sort last by `shed_order`. `shares` is left counting the kept
    tasks."""
    owned: list[list[int]] = [[] for _ in quotas]
    for t in pool:
        if owner[t] != NO_OWNER:
            owned[owner[t]].append(t)
    crowded = shares.crowded() if shares is not None else set()
    target: dict[int, int] = {}
    unassigned = [t for t in pool if owner[t] == NO_OWNER]
    for c, tasks in enumerate(owned):
        if c in crowded or len(tasks) > quotas[c]:
            tasks.sort(key=shed_order)
            if c in crowded:
                assert shares is not None
                within = shares.keep_within(tasks, c)
                unassigned.extend(t for t in tasks if t not in within)
                tasks = owned[c] = [t for t in tasks if t in within]
            if len(tasks) > quotas[c]:
                shed = tasks[quotas[c]:]
                unassigned.extend(shed)
                del tasks[quotas[c]:]
                if shares is not None:
                    shares.remove(shed, c)
        for t in tasks:
            target[t] = c
    return Kept(target, [len(o) for o in owned], unassigned)
