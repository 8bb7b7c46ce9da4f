"""Standby replicas: `num.standby.replicas` distinct clients per stateful task, never the active's client.

Preference per task: the client the active is waiting to move to (its standby is a free warm-up), then
the clients that hold it as standby now (stickiness), then other clients with the state, most caught
up first, while under their share; then the least loaded client (a heap). Load and share count all
tasks (actives and standbys) per capacity unit. A final pass relieves clients above their share.
With `rack.aware.assignment.tags`, a replica goes only where every tag value differs from the
replicas already placed, until a tag has no unused value left (then that tag stops constraining)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from .least_loaded import LeastLoaded
from .round_inputs import RoundInputs

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

    def admits_instead(self, holders: set[int], giver: int, active: int) -> Callable[[int], bool]:
        """Whether the rule allows a client to hold a task's replica instead of `giver`, given the
        task's active and other replicas."""
        used = self.start(active)
        for o in holders:
            if o != giver:
                self.add(used, o)
        return lambda d: self.allows(used, d)


def place_standbys(
    inputs: RoundInputs,
    tasks: Sequence[int],
    active: Sequence[int],
    pending_target: Mapping[int, int],
    active_load: Sequence[int],
) -> list[set[int]]:
    """Returns, per task number, the set of clients holding a standby. `tasks` are the stateful tasks
    in order; `active[t]` is the client planned to run task t's active this round, `pending_target`
    the client a pending move waits for, and `active_load` each client's active task count."""
    lags, capacities, configs = inputs.lags, inputs.capacities, inputs.configs
    n = len(capacities)
    per_task = min(configs.num_standby_replicas, n - 1)
    tag_keys = configs.rack_aware_assignment_tags
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
    # client with state, and what the final pass restores. The least loaded pick balances the same.
    everything = per_task * len(tasks) + sum(active_load)
    share = [-(-everything * cap // total_cap) for cap in capacities]
    load = list(active_load)
    spread = _TagSpread([s.tags for s in inputs.clients], tag_keys) if tag_keys else None
    least_loaded = LeastLoaded(range(n), load, capacities)
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
        if spread is not None and used is not None:
            _fill_tagged(t, least_loaded, per_task, chosen, a, used, spread, take)
            continue
        # Untagged: the least loaded clients other than the active's.
        for c in least_loaded.take(per_task - len(chosen), chosen | {a} if chosen else (a,)):
            chosen.add(c)
            load[c] += 1
            least_loaded.offer(c)
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
    takers = LeastLoaded((d for d in range(n) if load[d] < share[d]), load, capacities, share)
    moved = True
    while moved and takers:
        moved = False
        for c in over:
            for t in list(held[c]):
                if load[c] <= share[c] or not takers:
                    break
                # Not the active's client, not a holder already, and allowed by the tag rule given the
                # task's other replicas.
                holders, a = standby_of[t], active[t]
                d = takers.poll(holders | {a}, None if spread is None else spread.admits_instead(holders, c, a))
                if d is None:
                    continue
                standby_of[t].discard(c)
                standby_of[t].add(d)
                held[c].remove(t)
                load[c] -= 1
                load[d] += 1
                if load[d] < share[d]:
                    takers.offer(d)
                moved = True


def _fill_tagged(
    t: int,
    least_loaded: LeastLoaded,
    per_task: int,
    chosen: set[int],
    active: int,
    used: list[set[str | None]],
    spread: _TagSpread,
    take: Callable[[int, int, list[set[str | None]] | None], None],
) -> None:
    """Least loaded first among clients the tag rule allows; clients rejected only by the tag rule
    are used (least loaded first) when no allowed client is left."""
    skip = chosen | {active}
    rejected: list[int] = []

    def admit(c: int) -> bool:
        if spread.allows(used, c):
            return True
        rejected.append(c)  # in load order; not asked again
        skip.add(c)
        return False

    picked: list[int] = []
    while len(chosen) < per_task:
        c = least_loaded.poll(skip, admit)
        if c is None:
            break
        take(t, c, used)
        skip.add(c)
        picked.append(c)
    for c in rejected:
        if len(chosen) == per_task:
            break
        take(t, c, used)
    for c in picked:
        least_loaded.offer(c)
