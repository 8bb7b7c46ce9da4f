"""The general path for active tasks: any capacities, and state held by clients other than the owner
(standbys, earlier owners, warm-ups) steers where an unowned task goes.

1. Quotas by capacity (see quotas.py). 2. Keep: each owner keeps owned tasks up to its quota, giving
up first those another client could take without a warm-up. 3. Fill the rest, first onto caught-up
clients with room, then onto clients with partial state, then onto the least loaded client with room
(LeastLoaded, so the cost is O(tasks log clients), never clients x tasks)."""

from __future__ import annotations

from collections.abc import Sequence

from .least_loaded import LeastLoaded
from .quotas import keep_owned
from .round_inputs import RoundInputs


def general_assign(inputs: RoundInputs, pool: Sequence[int], prior_load: Sequence[int] | None = None) -> list[int]:
    """Returns the target client of each task of `pool`. prior_load: active tasks each client already
    has from earlier pools, counted when balancing this one."""
    owner, capacities, lags = inputs.owner, inputs.capacities, inputs.lags
    n = len(capacities)
    prior = prior_load or [0] * n
    quotas, target, kept, unassigned = keep_owned(
        pool,
        owner,
        capacities,
        lambda t: (lags.has_other_caught_up(t, owner[t], n), t),
        [p / cap for p, cap in zip(prior, capacities)],
    )
    unassigned.sort(key=inputs.fill_key)
    # Load with the earlier pools' tasks, and the limit it may reach: this pool's quota on top of those.
    load = [p + k for p, k in zip(prior, kept)]
    limit = [p + q for p, q in zip(prior, quotas)]

    # Caught-up clients with room first: these moves need no warm-up.
    rest: list[int] = []
    for t in unassigned:
        for h in lags.holders(t):
            if load[h] < limit[h] and lags.caught_up(t, h):
                target[t] = h
                load[h] += 1
                break
        else:
            rest.append(t)
    # Then clients that hold some of the state; then the least loaded client with room.
    least_loaded = LeastLoaded((c for c in range(n) if load[c] < limit[c]), load, capacities, limit)
    for t in rest:
        holder = next((h for h in lags.holders(t) if load[h] < limit[h]), None)
        if holder is not None:
            target[t] = holder
            load[holder] += 1
            continue
        c = least_loaded.poll()
        assert c is not None, "the quotas add up to the pool: some client has room"
        target[t] = c
        load[c] += 1
        least_loaded.offer(c)
    return [target[t] for t in pool]
