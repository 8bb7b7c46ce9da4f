"""How many tasks of a pool each client should run: its capacity share, rounded so the totals match.

Every client gets floor(n * capacity / total) and the leftover tasks go one each to clients whose share
is fractional (so nobody exceeds the ceiling of its share), preferring those that
(1) already own more than their floor (so keeping them costs no move), then (2) have the largest
fractional share, then (3) have the least load from earlier pools, then (4) come first by process id."""

from __future__ import annotations

from collections.abc import Sequence


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
