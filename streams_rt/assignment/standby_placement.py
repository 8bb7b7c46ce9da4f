"""Standby replicas: `num.standby.replicas` distinct clients per stateful task, never the active's client.

Preference per task: the client the active is waiting to move to (its standby is a free warm-up), then
the clients that hold it as standby now (stickiness), then other clients with the state, most caught
up first, while under their share; then the least loaded client (a heap). Load and share count all
tasks (actives and standbys) per capacity unit. A final pass relieves clients above their share.
With `rack.aware.assignment.tags`, a replica goes only where every tag value differs from the
replicas already placed, until a tag has no unused value left (then that tag stops constraining)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence

from .lag import Lags

_NONE: set[int] = frozenset()  # type: ignore[assignment]  # shared by tasks without standbys, never mutated


class _TagSpread:
    """Tracks the tag values used by one task's replicas."""

    def __init__(self, tags: Sequence[Mapping[str, str]], keys: Sequence[str]) -> None:
        self.keys = keys
        self.values = [tuple(t.get(k) for k in keys) for t in tags]
        self.distinct = [len({v[i] for v in self.values}) for i in range(len(keys))]

    def start(self, active: int) -> list[set[str | None]]:
        return [{v} for v in self.values[active]]

    def allows(self, used: list[set[str | None]], c: int) -> bool:
        vals = self.values[c]
        return all(
            vals[i] not in used[i] or len(used[i]) >= self.distinct[i] for i in range(len(self.keys))
        )

    def add(self, used: list[set[str | None]], c: int) -> None:
        for i, v in enumerate(self.values[c]):
            used[i].add(v)


def place_standbys(
    tasks: Sequence[int],
    active: Sequence[int],
    pending_target: Mapping[int, int],
    lags: Lags,
    capacities: Sequence[int],
    active_load: Sequence[int],
    num_standbys: int,
    tags: Sequence[Mapping[str, str]],
    tag_keys: Sequence[str],
) -> list[set[int]]:
    """Returns, per task index, the set of clients holding a standby. `active[t]` is the client planned
    to run task t's active this round; `tasks` are the stateful tasks in order."""
    n = len(capacities)
    per_task = min(num_standbys, n - 1)
    standby_of: list[set[int]] = [_NONE] * len(active)  # a real set per stateful task, made below
    if per_task <= 0:
        return standby_of
    if per_task == n - 1 and not tag_keys:
        # Every client but the active's holds a standby: nothing to choose and nothing to balance.
        others = [set(range(n)) - {c} for c in range(n)]
        for t in tasks:
            standby_of[t] = set(others[active[t]])
        return standby_of
    total_cap = sum(capacities)
    # Everyone's fair share of all tasks (actives and standbys), by capacity: the cap for preferring a
    # client with state, and what the final pass restores. The heap balances the same quantity.
    everything = per_task * len(tasks) + sum(active_load)
    share = [-(-everything * cap // total_cap) for cap in capacities]
    load = list(active_load)
    spread = _TagSpread(tags, tag_keys) if tag_keys else None
    heap = [(load[c] / capacities[c], c) for c in range(n)]
    heapq.heapify(heap)

    heappop, heappush = heapq.heappop, heapq.heappush
    standby_owners, reports = lags.standby_owners, lags.reports

    def allowed(c: int, a: int, chosen: set[int], used: list[set[str | None]] | None) -> bool:
        return c != a and c not in chosen and (used is None or spread.allows(used, c))  # type: ignore[union-attr]

    def take(t: int, c: int, used: list[set[str | None]] | None) -> None:
        standby_of[t].add(c)
        load[c] += 1
        if used is not None:
            spread.add(used, c)  # type: ignore[union-attr]

    for t in tasks:
        chosen = standby_of[t] = set()
        a = active[t]
        used = spread.start(a) if spread else None
        target = pending_target.get(t)
        if target is not None or standby_owners[t] or reports[t]:  # someone has a claim on the state
            if target is not None and load[target] < share[target] and allowed(target, a, chosen, used):
                take(t, target, used)
            # Sticky: current holders stay (the final pass moves some away if balance needs it). With
            # tags, a holder the rule rejects may become acceptable once others are placed (a tag runs
            # out of unused values), so repeat until nothing changes.
            waiting: Sequence[int] = standby_owners[t]
            if used is None:  # untagged: one pass decides
                for c in waiting:
                    if len(chosen) < per_task and c != a and c not in chosen:
                        chosen.add(c)
                        load[c] += 1
                waiting = ()
            while waiting and len(chosen) < per_task:
                rejected = []
                for c in waiting:
                    if len(chosen) < per_task and allowed(c, a, chosen, used):
                        take(t, c, used)
                    else:
                        rejected.append(c)
                if len(rejected) == len(waiting):
                    break
                waiting = rejected
            if len(chosen) < per_task:
                for c in lags.holders(t):
                    if len(chosen) == per_task:
                        break
                    if load[c] < share[c] and allowed(c, a, chosen, used):
                        take(t, c, used)
        if len(chosen) == per_task:
            continue
        if used is not None:
            _fill_tagged(t, heap, load, capacities, per_task, chosen, a, used, spread, take)
            continue
        # Untagged: the least loaded clients other than the active's (the hot path, kept inline).
        popped: list[int] = []
        while len(chosen) < per_task:
            key, c = heappop(heap)
            current = load[c] / capacities[c]
            if key != current:
                heappush(heap, (current, c))
                continue
            if c != a and c not in chosen:
                chosen.add(c)
                load[c] += 1
            popped.append(c)
        for c in popped:
            heappush(heap, (load[c] / capacities[c], c))
    _relieve_overloaded(standby_of, active, load, share, capacities, spread)
    return standby_of


def _relieve_overloaded(
    standby_of: list[set[int]],
    active: Sequence[int],
    load: list[int],
    share: Sequence[int],
    capacities: Sequence[int],
    spread: _TagSpread | None,
) -> None:
    """Move standbys from clients above their share to allowed clients below it, until no such move is
    left. Run to completion, so an assignment fed back unchanged has nothing to move: a fixpoint."""
    n = len(load)
    over = [c for c in range(n) if load[c] > share[c]]
    if not over:
        return
    held: list[list[int]] = [[] for _ in range(n)]
    for t, holders in enumerate(standby_of):
        for c in holders:
            held[c].append(t)
    under = [(load[d] / capacities[d], d) for d in range(n) if load[d] < share[d]]
    heapq.heapify(under)
    moved = True
    while moved and under:
        moved = False
        for c in over:
            for t in list(held[c]):
                if load[c] <= share[c] or not under:
                    break
                d = _least_loaded_taker(under, t, c, standby_of, active, load, capacities, spread)
                if d is None:
                    continue
                standby_of[t].discard(c)
                standby_of[t].add(d)
                held[c].remove(t)
                load[c] -= 1
                load[d] += 1
                if load[d] < share[d]:
                    heapq.heappush(under, (load[d] / capacities[d], d))
                moved = True


def _least_loaded_taker(
    under: list[tuple[float, int]],
    t: int,
    giver: int,
    standby_of: list[set[int]],
    active: Sequence[int],
    load: list[int],
    capacities: Sequence[int],
    spread: _TagSpread | None,
) -> int | None:
    """Pops the least loaded client below its share that may hold task t's replica instead of giver."""
    others = standby_of[t] - {giver}
    used = None
    if spread is not None:
        used = spread.start(active[t])
        for o in others:
            spread.add(used, o)
    skipped: list[tuple[float, int]] = []
    found = None
    while under:
        key, d = heapq.heappop(under)
        if key != load[d] / capacities[d]:
            continue  # stale: every live client below its share has a current entry
        if d != active[t] and d not in others and (used is None or spread.allows(used, d)):
            found = d
            break
        skipped.append((key, d))
    for entry in skipped:
        heapq.heappush(under, entry)
    return found


def _fill_tagged(
    t: int,
    heap: list[tuple[float, int]],
    load: list[int],
    capacities: Sequence[int],
    per_task: int,
    chosen: set[int],
    active: int,
    used: list[set[str | None]],
    spread: _TagSpread,
    take: Callable[[int, int, list[set[str | None]] | None], None],
) -> None:
    """Least loaded first among clients the tag rule allows; clients rejected only by the tag rule
    are used (least loaded first) when no allowed client is left."""
    popped: list[int] = []
    tag_rejected: list[int] = []
    while len(chosen) < per_task and heap:
        key, c = heapq.heappop(heap)
        current = load[c] / capacities[c]
        if key != current:
            heapq.heappush(heap, (current, c))
            continue
        if c == active or c in chosen:
            popped.append(c)
        elif spread.allows(used, c):
            take(t, c, used)
            popped.append(c)
        else:
            tag_rejected.append(c)
    for c in tag_rejected:
        if len(chosen) < per_task:
            take(t, c, used)
        popped.append(c)
    for c in popped:
        heapq.heappush(heap, (load[c] / capacities[c], c))

