"""How many tasks of a pool each client should run: its capacity share, rounded so the totals match.

Every client gets floor(n * capacity / total) and the leftover tasks go one each to clients whose share
is fractional (so nobody exceeds the ceiling of its share), preferring those that
(1) already own more than their floor (so keeping them costs no move), then (2) have the largest
fractional share, then (3) have the least load from earlier pools, then (4) come first by process id.
`keep_owned` is the sticky start both placement paths share: owners keep their tasks up to the quota."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from .ownership import NO_OWNER


def capacity_quotas(
    n_tasks: int,
    capacities: Sequence[int],
    owned: Sequence[int],
    prior_load: Sequence[float] | None = None,
) -> list[int]:
    total = sum(capacities)
    quotas = [n_tasks * cap // total for cap in capacities]
    leftover = n_tasks - sum(quotas)
    if leftover:
        prior = prior_load or [0.0] * len(capacities)
        fractional = [c for c in range(len(capacities)) if n_tasks * capacities[c] % total]
        order = sorted(
            fractional,
            key=lambda c: (
                owned[c] <= quotas[c],
                -(n_tasks * capacities[c] % total) / total,
                prior[c],
                c,
            ),
        )
        for c in order[:leftover]:
            quotas[c] += 1
    return quotas


class Kept(NamedTuple):
    """The sticky start of a pool's placement: the pool's `quotas`, `target` mapping each kept task to
    its owner, `load` counting the tasks each client keeps, and `unassigned` (unowned or given up, in no
    particular order: callers sort it)."""

    quotas: list[int]
    target: dict[int, int]
    load: list[int]
    unassigned: list[int]


def keep_owned(
    pool: Sequence[int],
    owner: Sequence[int],
    capacities: Sequence[int],
    shed_order: Callable[[int], tuple[bool, int]],
    prior_load: Sequence[float] | None = None,
) -> Kept:
    """Each owner keeps its tasks of `pool` up to its quota, so nothing moves that balance does not
    need; an owner above its quota gives up the tasks that sort last by `shed_order`."""
    owned: list[list[int]] = [[] for _ in capacities]
    for t in pool:
        if owner[t] != NO_OWNER:
            owned[owner[t]].append(t)
    quotas = capacity_quotas(len(pool), capacities, [len(o) for o in owned], prior_load)
    target: dict[int, int] = {}
    unassigned = [t for t in pool if owner[t] == NO_OWNER]
    for c, tasks in enumerate(owned):
        if len(tasks) > quotas[c]:
            tasks.sort(key=shed_order)
            unassigned.extend(tasks[quotas[c]:])
            del tasks[quotas[c]:]
        for t in tasks:
            target[t] = c
    return Kept(quotas, target, [len(o) for o in owned], unassigned)
