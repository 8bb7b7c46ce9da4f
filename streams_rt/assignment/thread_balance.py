"""Counts per client that balance tasks per capacity unit (per thread) as evenly as bounds allow.

Each client c gets a count in [lo[c], hi[c]], the counts adding up to the pool, and what is balanced is
(prior[c] + count) / capacity[c] (prior: tasks from earlier pools). With equal capacities, filling the
least loaded client first is best on both ends at once. With capacities that differ it is not: filling
by the load a task would bring minimises the highest load but can leave a small client at 0 while a
large one runs a whole task per thread (18 tasks over capacities 1..3: max - min 1, where 0.5 is
possible, and Kafka's round robin plus balanceTasksOverThreads finds it). So there the narrowest
window [m, M] of loads that every client can be put in, with the counts still adding up, is searched
for first (a sweep over the loads clients can reach: O(L log L), L being about the total capacity), and
the counts are then filled within it.

Within the bounds (or the window) the units go one at a time to the client `order(c, count)` sorts
first, so callers keep their own preference: owners first (stickiness), or the least loaded."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from .ceil_matching import CeilMatching


def balanced_counts(
    n_tasks: int,
    capacities: Sequence[int],
    prior: Sequence[int],
    lo: Sequence[int],
    hi: Sequence[int],
    order: Callable[[int, int], Any],
    sizes: Sequence[int] | None = None,
) -> list[int]:
    """sum(lo) <= n_tasks <= sum(hi). order(c, count): sort key of giving client c, now at `count`, one
    more (smallest first). sizes: the pool's subtopology sizes when it has several; the counts are then
    ones the subtopology targets can add up to (ceil_matching.py), which [lo, hi] must allow: within
    the floor and ceil of each client's capacity share of the pool they always can."""
    if len(set(capacities)) > 1:
        counts = windowed_counts(n_tasks, capacities, prior, lo, hi, order, sizes)
        if counts is not None:
            return counts
    counts = _fill(n_tasks, list(lo), hi, order, sizes, capacities)
    assert counts is not None, "the bounds allow counts the subtopology targets add up to"
    return counts


def windowed_counts(
    n_tasks: int,
    capacities: Sequence[int],
    prior: Sequence[int],
    lo: Sequence[int],
    hi: Sequence[int],
    order: Callable[[int, int], Any],
    sizes: Sequence[int] | None = None,
) -> list[int] | None:
    """Counts within the narrowest window of loads (see the module docstring), None when the bounds
    allow no counts adding up to n_tasks or the subtopology targets cannot add up to those found."""
    if not sum(lo) <= n_tasks <= sum(hi):
        return None
    window = narrowest_window(n_tasks, capacities, prior, lo, hi)
    if window is None:
        return None
    m, top = window
    low = [max(lo[c], math.ceil(m * cap - prior[c])) for c, cap in enumerate(capacities)]
    up = [min(hi[c], math.floor(top * cap - prior[c])) for c, cap in enumerate(capacities)]
    return _fill(n_tasks, low, up, order, sizes, capacities)


def load_spread(counts: Sequence[int], capacities: Sequence[int], prior: Sequence[int]) -> Fraction:
    scale = PerThread(capacities)
    loads = [scale.level(c, p + q) for c, (p, q) in enumerate(zip(prior, counts, strict=True))]
    return Fraction(max(loads) - min(loads), scale.unit)


class PerThread:
    """Tasks per capacity unit as integers: `level(c, tasks)` is tasks / capacity(c) times `unit` (the
    least common multiple of the capacities), so levels compare exactly without fractions (a sort of
    thousands of Fractions is what the window search would otherwise spend its time on)."""

    __slots__ = ("unit", "scale")

    def __init__(self, capacities: Sequence[int]) -> None:
        self.unit = math.lcm(*capacities)
        self.scale = [self.unit // cap for cap in capacities]

    def level(self, c: int, tasks: int) -> int:
        return tasks * self.scale[c]


def possible(counts: Sequence[int], sizes: Sequence[int] | None, capacities: Sequence[int]) -> bool:
    """Whether subtopology targets can add up to these counts (always, with one subtopology)."""
    if sizes is None:
        return True
    matching = CeilMatching(sizes, capacities)
    return all(
        q >= f and all(matching.add(c) for _ in range(q - f))
        for c, (q, f) in enumerate(zip(counts, matching.floors, strict=True))
    )


def _fill(
    n_tasks: int,
    low: list[int],
    up: Sequence[int],
    order: Callable[[int, int], Any],
    sizes: Sequence[int] | None = None,
    capacities: Sequence[int] = (),
) -> list[int] | None:
    """From `low`, units one at a time in `order` up to `up`; None when the subtopology targets cannot
    reach `low` or n_tasks."""
    counts = low
    matching = None
    if sizes is not None:
        matching = CeilMatching(sizes, capacities)
        for c, (q, f) in enumerate(zip(counts, matching.floors, strict=True)):
            if q < f or not all(matching.add(c) for _ in range(q - f)):
                return None
    heap = [(order(c, counts[c]), c) for c in range(len(counts)) if counts[c] < up[c]]
    heapq.heapify(heap)
    for _ in range(n_tasks - sum(counts)):
        while heap:
            _, c = heapq.heappop(heap)
            if matching is None or matching.add(c):
                break
        else:
            return None
        counts[c] += 1
        if counts[c] < up[c]:
            heapq.heappush(heap, (order(c, counts[c]), c))
    return counts


def narrowest_window(
    n_tasks: int, capacities: Sequence[int], prior: Sequence[int], lo: Sequence[int], hi: Sequence[int]
) -> tuple[Fraction, Fraction] | None:
    """The loads [m, M] with M - m smallest such that every client can be given a count within its
    bounds and a load within [m, M], the counts adding up to n_tasks (None: the bounds allow nothing)."""
    n = len(capacities)
    per_thread = PerThread(capacities)
    scale, unit = per_thread.scale, per_thread.unit
    # Filling by the load a task brings gives the lowest possible maximum `top`; its minimum `bottom`
    # bounds the answer: the best window lies within [bottom, 2 top - bottom] (its M is at least top
    # and its width at most top - bottom).
    # That fill gives the n_tasks - sum(lo) units of lowest load first, so the units up to the average
    # load are given at once where they are no more than that (then the same counts come out, but
    # thousands of units, as the standbys of standby_room.py, cost no heap operation each).
    # Loads are integers, tasks per capacity unit times `unit` (PerThread).
    total = n_tasks + sum(prior)
    total_cap = sum(capacities)
    ahead = [min(hi[c], max(lo[c], total * cap // total_cap - prior[c])) for c, cap in enumerate(capacities)]
    start = _fill(n_tasks, ahead if sum(ahead) <= n_tasks else list(lo), hi,
                  lambda c, q: ((prior[c] + q + 1) * scale[c], c))
    if start is None:
        return None
    levels = [(prior[c] + start[c]) * scale[c] for c in range(n)]
    bottom, top = min(levels), max(levels)
    if bottom == top:
        return Fraction(bottom, unit), Fraction(top, unit)
    reach = 2 * top - bottom
    values: list[tuple[int, int, int]] = []  # (load, client, count)
    first = [0] * n
    for c in range(n):
        first[c] = max(lo[c], -(-bottom // scale[c]) - prior[c])
        for q in range(first[c], min(hi[c], reach // scale[c] - prior[c]) + 1):
            values.append(((prior[c] + q) * scale[c], c, q))
    values.sort()
    low = list(first)  # counts of loads >= m
    up = [f - 1 for f in first]  # counts of loads <= M: none yet
    sum_low, sum_up, bad = sum(low), sum(up), n  # bad: clients with low > up
    stuck = False  # a client's count of loads >= m above its bound: so for any higher m
    best: tuple[int, int] | None = None
    j = k = 0
    i = 0
    while i < len(values) and values[i][0] <= top:
        m = values[i][0]
        while values[k][0] < m:  # loads below m are out
            _, c, q = values[k]
            was_bad = low[c] > up[c]
            sum_low += q + 1 - low[c]
            low[c] = q + 1
            bad += (low[c] > up[c]) - was_bad
            stuck = stuck or low[c] > hi[c]
            k += 1
        if stuck or sum_low > n_tasks:
            break
        while (bad or sum_up < n_tasks) and j < len(values):
            level = values[j][0]
            while j < len(values) and values[j][0] == level:
                _, c, q = values[j]
                was_bad = low[c] > up[c]
                sum_up += q - up[c]
                up[c] = q
                bad += (low[c] > up[c]) - was_bad
                j += 1
        if bad or sum_up < n_tasks:
            break
        width = values[j - 1][0] - m
        if best is None or width < best[1] - best[0]:
            best = (m, values[j - 1][0])
        while i < len(values) and values[i][0] == m:
            i += 1
    return None if best is None else (Fraction(best[0], unit), Fraction(best[1], unit))
