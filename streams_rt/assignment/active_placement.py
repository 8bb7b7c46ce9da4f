"""The general path for active tasks: any capacities, and state held by clients other than the owner
(standbys, earlier owners, warm-ups) steers where an unowned task goes.

1. Quotas by capacity (see quotas.py). 2. Keep: each owner keeps owned tasks up to its quota, giving
up first those another client could take without a warm-up. 3. Fill the rest, first onto caught-up
clients with room, then onto clients with partial state, then onto the least loaded client with room
(a heap, so the cost is O(tasks log clients), never clients x tasks)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from .lag import Lags
from .quotas import keep_owned


def general_assign(
    pool: Sequence[int],
    owner: Sequence[int],
    capacities: Sequence[int],
    lags: Lags,
    fill_key: Callable[[int], object] | None,
    prior_load: Sequence[int] | None = None,
) -> list[int]:
    n = len(capacities)
    prior = prior_load or [0] * n
    quotas, target, load, unassigned = keep_owned(
        pool,
        owner,
        capacities,
        lambda t: (lags.has_other_caught_up(t, owner[t], n), t),
        [p / cap for p, cap in zip(prior, capacities)],
    )
    unassigned.sort(key=fill_key)

    def room(c: int) -> bool:
        return load[c] < quotas[c]

    # Caught-up clients with room first: these moves need no warm-up.
    rest: list[int] = []
    for t in unassigned:
        for h in lags.holders(t):
            if room(h) and lags.caught_up(t, h):
                target[t] = h
                load[h] += 1
                break
        else:
            rest.append(t)
    # Then clients that hold some of the state; then the least loaded client with room.
    heap = [((prior[c] + load[c]) / capacities[c], c) for c in range(n) if room(c)]
    heapq.heapify(heap)
    for t in rest:
        chosen = next((h for h in lags.holders(t) if room(h)), None)
        if chosen is None:
            while True:
                key, c = heapq.heappop(heap)
                if not room(c):
                    continue
                current = (prior[c] + load[c]) / capacities[c]
                if key != current:
                    heapq.heappush(heap, (current, c))
                    continue
                chosen = c
                break
        target[t] = chosen
        load[chosen] += 1
        if room(chosen):
            heapq.heappush(heap, ((prior[chosen] + load[chosen]) / capacities[chosen], chosen))
    return [target[t] for t in pool]
