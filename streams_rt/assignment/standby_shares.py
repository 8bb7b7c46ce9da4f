"""How many tasks (actives and standbys) each client should end up with, where capacities differ.

The standby passes balance all tasks per capacity unit by Kafka's criterion (shouldMoveATask in its
balanceTasksOverThreads): a standby moves when the taker's load per capacity unit, with it, stays at
or below the giver's without it. Many counts leave no such move, and they differ in how evenly the
standbys alone are spread (Kafka's assignor happens upon one or another). Counts leave none exactly
when, A being their highest (count - 1) / capacity, every client c runs more than A x capacity(c) - 1
and at most A x capacity(c) + 1 tasks: so for each candidate A a client has one or two possible
counts. For each A and each lowest standby load m, every client takes its smallest count with
standbys at m or above, and the counts still missing go where they raise the highest standbys per
capacity unit least, of those to the least loaded clients. The counts with the most even standbys
win, then those with the most even loads. Each client holds at most one replica of each task it does
not run. Unless `ceils` bound them, a client may end above the ceil of its share of all tasks where
that makes the standbys more even: the criterion alone bounds the loads, as in Kafka's assignor (random
seed 227 of the quality bench: capacities 2, 3, 1, 1 and 3 running 14, 22, 7, 7 and 22 tasks, 24
standbys; within the ceils the standbys spread 1 per thread, a three-thread client one above its ceil
brings them to 2/3). The counts know nothing of rack tags, so with tags the caller bounds them by the
ceils (standby_placement.py)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from fractions import Fraction

from .thread_balance import PerThread


def even_standby_shares(
    n_standbys: int,
    active_load: Sequence[int],
    capacities: Sequence[int],
    most: Sequence[int],
    ceils: Sequence[int] | None = None,
) -> list[int] | None:
    """Each client's count of all tasks, None when no counts pass the criterion. most[c]: the standbys
    client c can hold at most. ceils: each client's count at most this (None: the criterion alone bounds
    the counts)."""
    n, total_cap = len(capacities), sum(capacities)
    limits = list(ceils) if ceils is not None else [a + k for a, k in zip(active_load, most, strict=True)]
    everything = n_standbys + sum(active_load)
    # Levels (tasks per capacity unit) as integers, scaled by the capacities' least common multiple.
    per_thread = PerThread(capacities)
    scale = per_thread.scale
    # A: the highest (count - 1) / capacity; every client's count then lies in (A x capacity - 1,
    # A x capacity + 1]. A is at least any client's (actives - 1) / capacity, and the counts' bounds
    # must add up to all tasks.
    low = max(Fraction(everything - 2 * n, total_cap), *map(Fraction, (a - 1 for a in active_load), capacities))
    high = Fraction(everything + n, total_cap)
    levels = {q * (per_thread.unit // k) for k in set(capacities)
              for q in range(math.ceil(low * k), math.floor(high * k) + 1)}
    best: tuple[int, int, list[int]] | None = None
    for top in sorted(levels):
        lo = [max(top // sc - a, 0) for a, sc in zip(active_load, scale, strict=True)]
        hi = [
            min(top // sc + 1, a + k, limit) - a
            for a, sc, k, limit in zip(active_load, scale, most, limits, strict=True)
        ]
        if any(map(int.__gt__, lo, hi)) or not sum(lo) <= n_standbys <= sum(hi):
            continue
        floors = {q * scale[c] for c in range(n) for q in range(lo[c], hi[c] + 1)}
        for m in sorted(floors):
            counts = _counts_from(m, n_standbys, lo, hi, active_load, scale)
            if counts is None:
                continue
            score = (_spread(counts, scale), _spread(list(map(int.__add__, active_load, counts)), scale))
            if best is None or score < best[:2]:
                best = (*score, counts)
    return None if best is None else [a + s for a, s in zip(active_load, best[2], strict=True)]


def _counts_from(
    m: int, n_standbys: int, lo: Sequence[int], hi: Sequence[int], active_load: Sequence[int], scale: Sequence[int]
) -> list[int] | None:
    """Standby counts within [lo, hi], each at m (scaled: PerThread) per capacity unit or above, adding
    up to n_standbys, with the highest standbys per capacity unit as low as it can be (None: there are
    none)."""
    counts = [max(lo[c], -(-m // sc)) for c, sc in enumerate(scale)]
    if any(map(int.__gt__, counts, hi)) or sum(counts) > n_standbys:
        return None
    raise_by = n_standbys - sum(counts)
    ups = [
        ((counts[c] + 1) * sc, (active_load[c] + counts[c]) * sc, c)
        for c, sc in enumerate(scale)
        if counts[c] < hi[c]
    ]
    if len(ups) < raise_by:
        return None
    if raise_by:
        # The highest standby load the raises need; of the raises up to it, those to the least loaded.
        need = heapq.nsmallest(raise_by, ups)[-1][0]
        for _, _, c in heapq.nsmallest(raise_by, ((load, level, c) for level, load, c in ups if level <= need)):
            counts[c] += 1
    return counts


def _spread(counts: Sequence[int], scale: Sequence[int]) -> int:
    loads = [q * sc for q, sc in zip(counts, scale, strict=True)]
    return max(loads) - min(loads)
