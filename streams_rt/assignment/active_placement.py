"""The general path for active tasks: any capacities, and state held by clients other than the owner
(standbys, earlier owners, warm-ups) steers where an unowned task goes.

1. Quotas (see quotas.py). 2. Keep: each owner keeps owned tasks up to its quota and its share of each
subtopology (spread.py), giving up first those another client could take without a warm-up; with equal
capacities, a stateful task nobody owns and nobody is caught up on counts as owned by its least-lag
client (least_lag_owners). 3. Fill
the rest, first onto caught-up clients with room, then onto clients with partial state (in both as
many as the room allows: holder_fill.py), then onto the least loaded client with room (LeastLoaded, so
the cost is O(tasks log clients), never clients x tasks); "room" includes the client's share of the
task's subtopology, unless no client with room for the task has any."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain

from .forced_replicas import ForcedReplicas
from .holder_fill import HolderFill
from .least_loaded import LeastLoaded
from .ownership import NO_OWNER
from .quotas import JointBounds, capacity_quotas, filling_quotas, keep_owned, owned_counts, subtopology_sizes
from .round_inputs import RoundInputs
from .spread import SubtopologyShares
from .standby_room import StandbyRoom


def general_assign(
    inputs: RoundInputs,
    pool: Sequence[int],
    prior_load: Sequence[int] | None = None,
    bounds: JointBounds | None = None,
    spread: bool = True,
    keep: Sequence[int] | None = None,
) -> list[int]:
    """Returns the target client of each task of `pool`. prior_load: for the stateless pool, active
    tasks each client already has; the pool then fills up the least loaded clients
    (quotas.filling_quotas). bounds: for the stateful pool, quotas.joint_bounds. Without `spread` (the
    stateless pool only) the least loaded clients fill up regardless of the subtopology shares. keep:
    for the stateless pool, where each task stays if the quotas allow (default: its owner)."""
    capacities, lags = inputs.capacities, inputs.lags
    n = len(capacities)
    owner = (keep or inputs.owner) if prior_load is not None else least_lag_owners(inputs, pool)
    prior = prior_load
    sizes = subtopology_sizes(pool, inputs.subtopology)
    quotas: list[int] | None = None  # equal capacities, several subtopologies: the targets choose (spread.py)
    forced = ForcedReplicas.of(inputs.clients, inputs.configs) if prior is None else None
    if prior is not None:
        standbys = Counter(chain.from_iterable(lags.standby_owners))
        held = [standbys.get(c, 0) for c in range(n)]
        owned = owned_counts(pool, owner, n)
        quotas = filling_quotas(pool, inputs.subtopology, capacities, prior, inputs.rank, owned, held, spread)
    elif len(set(capacities)) > 1 or sizes is None:
        owned = owned_counts(pool, owner, n)
        standby_room = StandbyRoom.of(inputs.clients, inputs.configs) if len(set(capacities)) > 1 else None
        quotas = capacity_quotas(len(pool), capacities, inputs.rank, owned, sizes, bounds, forced, standby_room)
    shares = SubtopologyShares.of(pool, inputs.subtopology, inputs.rank) if spread else None
    if shares is not None:
        ceils_first = forced.ceils_first() if forced is not None and quotas is None else ()
        quotas = shares.start(owner, capacities, quotas, ceils_first)
    assert quotas is not None
    target, kept, unassigned = keep_owned(
        pool, owner, quotas, lambda t: (lags.has_other_caught_up(t, owner[t], n), t), shares
    )
    unassigned.sort(key=inputs.fill_key)
    # Load with the earlier pools' tasks, and the limit it may reach: this pool's quota on top of those.
    base = prior or [0] * n
    load = [p + k for p, k in zip(base, kept, strict=True)]
    limit = [p + q for p, q in zip(base, quotas, strict=True)]

    def room(t: int, c: int) -> bool:
        return load[c] < limit[c] and (shares is None or shares.room(t, c))

    def place(t: int, c: int) -> None:
        target[t] = c
        load[c] += 1
        if shares is not None:
            shares.add(t, c)

    def remove(t: int, c: int) -> None:
        del target[t]
        load[c] -= 1
        if shares is not None:
            shares.remove((t,), c)

    def short_in_subtopology(t: int, c: int) -> bool:
        return shares is not None and not shares.room(t, c)

    def caught_up_holders(t: int) -> list[int]:
        return [h for h in lags.holders(t) if lags.caught_up(t, h)]

    # Caught-up clients with room first: these moves need no warm-up. Then clients that hold some of
    # the state (holder_fill.py: as many as the room allows, whatever the fill order); then the least
    # loaded client with room.
    rest = unassigned
    for holders in (caught_up_holders, lags.holders):
        rest = HolderFill(holders, room, short_in_subtopology, inputs.subtopology, place, remove).fill(rest)
    least_loaded = LeastLoaded((c for c in range(n) if load[c] < limit[c]), load, capacities, limit)
    for t in rest:
        c = least_loaded.poll(accept=None if shares is None else lambda d: shares.room(t, d))  # noqa: B023
        if c is None:
            # Nobody with room has room for this subtopology: its owner keeps it if it has room (as
            # it was placed last round, so an unchanged group is a fixpoint), else the least loaded.
            if owner[t] >= 0 and load[owner[t]] < limit[owner[t]]:
                place(t, owner[t])
                continue
            c = least_loaded.poll()
        assert c is not None, "the quotas add up to the pool: some client has room"
        place(t, c)
        least_loaded.offer(c)
    return [target[t] for t in pool]



def least_lag_owners(inputs: RoundInputs, pool: Sequence[int]) -> list[int]:
    """Each task's owner; with equal capacities, a task nobody owns and nobody is caught up on counts as
    owned by the client with the least lag, where it runs until its target has caught up
    (warmups.gate_to_caught_up). It runs there and is owned there in the next round, so a target
    elsewhere, warmed up now, would be dropped then for the owner's claim (a warm-up and a probing
    round for nothing). Not with capacities that differ: there the owners' counts pick among equally
    even quotas, and a large client with the least lag on many tasks kept them at the standbys'
    expense (quality bench, random seed 278: standby spread 1 -> 1.33)."""
    owner, lags = inputs.owner, inputs.lags
    if len(set(inputs.capacities)) > 1:
        return owner
    default, reports, end = lags.default_caught_up, lags.reports, lags.end
    unowned = [t for t in pool if owner[t] == NO_OWNER and reports[t] and not default[t]]
    if not unowned:
        return owner
    owner = list(owner)
    for t in unowned:
        least = lags.holders(t)[0]
        if lags.rank(t, least) < (end[t] or 0) and not lags.caught_up(t, least):
            owner[t] = least
    return owner
