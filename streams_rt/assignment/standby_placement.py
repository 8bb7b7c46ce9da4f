"""Standby replicas: `num.standby.replicas` distinct clients per stateful task, never the active's client.

1. Plan, around where the actives end up once the pending moves are made (planned around where they
   run meanwhile, the standbys would be balanced again after the moves: more warm-ups, more probing
   rounds). Preference per task: the clients that hold it as standby now (stickiness; with more holders
   than replicas, caught-up and less loaded ones first), then a pending move's source (it runs the
   task: caught up, and its replica gives the target a free warm-up, see 2), then other clients with
   the state, most caught up first, while under their share; then the least loaded client. Load and
   share count all tasks (actives and standbys) per capacity unit. Passes then move standbys from
   clients above the ceil of their share to clients below it, from clients above their (rounded)
   share to clients below it, and to any client that, with it, stays at or below the giver's load per
   capacity unit without it (Kafka's criterion in balanceTasksOverThreads, for zones the tag rule
   keeps from their share), preferring takers that hold the task's state; where the loads leave a
   choice, the standbys alone are evened out too (with capacities that differ the shares themselves
   are chosen for that: standby_shares.py).
   Where no direct move is left but one of these would fit between two clients through others, a
   chain of moves makes it (the middle clients' loads unchanged). With several tag keys, two replicas
   of one task may then move at once where neither can alone without raising its tag deficit.
2. This round: a pending move's source still runs the task, so where the plan gives it a replica, the
   move's target holds that replica meanwhile (a free warm-up). Keep a caught-up replica (KIP-441 for
   standbys, as Kafka's standby task movements): when the plan leaves a task without a caught-up
   replica while a caught-up client could hold one, that client keeps one for now and the planned
   client becomes a pending standby move, which gets a warm-up from what is left of
   `max.warmup.replicas`. So balancing never leaves a task without a caught-up replica when it could
   have one.

With `rack.aware.assignment.tags`, a replica goes only where every tag value differs from the values
already used by the task's active and replicas, until a tag has no unused value left (then that tag
stops constraining). When no client passes, the client that adds the most unused values is taken
(least loaded first), and the rule is checked again for the next replica. With several keys the rule
depends on the order replicas are taken in; replicas are chosen as the next round's sticky pass will
keep them, so an unchanged group keeps its standbys, and a replica adding fewer unused values than
another client would in its place gives way to it. A balancing move goes to a client the rule allows
or, where the giver was not one, to one adding as many unused values: it never raises the task's tag
deficit."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from .least_loaded import LeastLoaded
from .round_inputs import RoundInputs
from .standby_shares import even_standby_shares
from .thread_balance import balanced_counts
from .warmups import PendingMove

Used = list[set[str | None]]  # per tag key, the values a task's active and replicas use
PAIR_TAKERS = 8  # takers a pair move tries (see _Placement._pair_moves)


class _TagSpread:
    """The tag values of every client, and the rule over the values one task's replicas use."""

    def __init__(self, tags: Sequence[Mapping[str, str]], keys: Sequence[str]) -> None:
        self.keys = keys
        self.values = [tuple(t.get(k) for k in keys) for t in tags]
        self.distinct = [len({v[i] for v in self.values}) for i in range(len(keys))]

    def start(self, active: int) -> Used:
        return [{v} for v in self.values[active]]

    def score(self, used: Used, c: int) -> int:
        """How many tag keys client c would spread the task over (a key whose values are all used
        counts for everyone)."""
        spreads = 0
        for v, values, distinct in zip(self.values[c], used, self.distinct, strict=True):
            if v not in values or len(values) >= distinct:
                spreads += 1
        return spreads

    def allows(self, used: Used, c: int) -> bool:
        for v, values, distinct in zip(self.values[c], used, self.distinct, strict=True):
            if v in values and len(values) < distinct:
                return False
        return True

    def add(self, used: Used, c: int) -> None:
        for i, v in enumerate(self.values[c]):
            used[i].add(v)

    def used_without(self, holders: set[int], giver: int, active: int) -> Used:
        """The values a task uses once `giver` no longer holds its replica."""
        used = self.start(active)
        for o in holders:
            if o != giver:
                self.add(used, o)
        return used


@dataclass(frozen=True, slots=True)
class StandbyPlan:
    """standby_of[t]: the clients holding task t's standby replicas (empty for stateless tasks).
    waiting: replicas the balance wants on clients that are not caught up yet; a caught-up client
    holds each meanwhile. They are the standby warm-up candidates, and each asks for a probing
    rebalance."""

    standby_of: list[set[int]]
    waiting: list[PendingMove]


def place_standbys(
    inputs: RoundInputs,
    tasks: Sequence[int],
    active: Sequence[int],
    pending_target: Mapping[int, int],
    final_load: Sequence[int],
) -> StandbyPlan:
    """`tasks` are the stateful tasks in order; `active[t]` is the client planned to run task t's
    active this round, `pending_target` the client a pending move waits for, and `final_load` each
    client's active task count once the pending moves are made (stateless tasks where they will run
    then).

    The standbys are planned around where the actives end up, so the round after the moves keeps them
    (see the module docstring)."""
    n = inputs.n_clients
    per_task = min(inputs.configs.num_standby_replicas, n - 1)
    tag_keys = inputs.configs.rack_aware_assignment_tags
    none: set[int] = set()  # shared by tasks without standbys, never mutated
    standby_of = [none] * len(active)
    if per_task <= 0:
        return StandbyPlan(standby_of, [])
    final = list(active)
    for t, target in pending_target.items():
        final[t] = target
    if per_task == n - 1:
        # Every client but the active's holds a standby: nothing to choose, balance or keep (rack tags
        # could only order the replicas).
        others = [set(range(n)) - {c} for c in range(n)]
        for t in tasks:
            standby_of[t] = set(others[active[t]])
        return StandbyPlan(standby_of, [])
    stateful_active = [0] * n
    for t in tasks:
        stateful_active[final[t]] += 1
    placement = _Placement(inputs, per_task, standby_of, final, final_load, stateful_active, len(tasks))
    source = {t: active[t] for t in pending_target}
    if tag_keys:
        for t in tasks:
            placement.place_tagged(t, source.get(t))
    else:
        placement.place_untagged(tasks, source)
    placement.rebalance()
    placement.start_moves(pending_target, active)
    return StandbyPlan(standby_of, placement.keep_caught_up(tasks))


class _Placement:
    """One round's standby placement: the plan so far and each client's load (actives and standbys)."""

    def __init__(
        self,
        inputs: RoundInputs,
        per_task: int,
        standby_of: list[set[int]],
        active: Sequence[int],
        active_load: Sequence[int],
        stateful_active: Sequence[int],
        n_tasks: int,
    ) -> None:
        self.inputs, self.lags, self.capacities = inputs, inputs.lags, inputs.capacities
        self.per_task, self.standby_of, self.active = per_task, standby_of, active
        # Everyone's share of all tasks (actives and standbys), by capacity, rounded so the shares add up:
        # the leftover ceils go to the clients with the most actives per capacity unit, so that the
        # standbys spread as evenly as the actives allow. The cap for preferring a client with state,
        # and what the balancing passes restore; the least loaded pick balances the same quantity.
        # With capacities that differ, the shares are the counts that pass Kafka's criterion with the
        # standbys alone most even per thread (standby_shares.py), else the ceils go where the shares
        # come out most even per thread (thread_balance.py): a one-thread client left at its floor of 0
        # idles while the others run a task per thread, where a three-thread one at its floor runs 2 on 3.
        total_cap, capacities = sum(self.capacities), self.capacities
        everything = per_task * n_tasks + sum(active_load)
        self.ceil_share = [-(-everything * cap // total_cap) for cap in capacities]
        floors = [everything * cap // total_cap for cap in capacities]

        def order(c: int, _count: int) -> tuple[float, int]:
            return (-active_load[c] / capacities[c], c)

        shares = None
        if len(set(capacities)) > 1:
            most = [n_tasks - k for k in stateful_active]
            # Without rack tags the shares may pass the ceils to even the standbys (standby_shares.py).
            # With them, not: the tag rule can put a replica where the counts did not (a client alone
            # in its zone with the others full), and the standbys are then no more even for the excess.
            tagged = bool(inputs.configs.rack_aware_assignment_tags)
            shares = even_standby_shares(per_task * n_tasks, active_load, capacities, most,
                                         self.ceil_share if tagged else None)
            if shares:
                self.ceil_share = list(map(max, self.ceil_share, shares))
        self.share = shares or balanced_counts(
            everything, capacities, [0] * len(capacities), floors, self.ceil_share, order
        )
        self.load, self.active_load = list(active_load), active_load
        self.least_loaded = LeastLoaded(range(inputs.n_clients), self.load, self.capacities)
        tag_keys = inputs.configs.rack_aware_assignment_tags
        self.spread = _TagSpread([s.tags for s in inputs.clients], tag_keys) if tag_keys else None
        self.pair_budget = per_task * n_tasks  # pair moves per round (see _pair_moves)

    def place_untagged(self, tasks: Sequence[int], source: Mapping[int, int]) -> None:
        """The hot path, kept in one loop. source: where a pending move's task runs this round."""
        per_task, standby_of, active, load, share = self.per_task, self.standby_of, self.active, self.load, self.share
        lags, least_loaded = self.lags, self.least_loaded
        standby_owners, reports = lags.standby_owners, lags.reports
        for t in tasks:
            chosen = standby_of[t] = set()
            a = active[t]
            if standby_owners[t] or reports[t]:  # someone has a claim on the state
                # Sticky: current holders stay (the relieving pass moves some away if balance needs it).
                holding = standby_owners[t]
                if len(holding) > per_task:  # a finished warm-up: keep the caught-up, less loaded ones
                    holding = self._by_preference(t, holding)
                if t in source:
                    holding = [*holding, source[t]]
                for c in holding:
                    if len(chosen) < per_task and c != a and c not in chosen:
                        chosen.add(c)
                        load[c] += 1
                if len(chosen) < per_task:
                    for c in lags.holders(t):
                        if len(chosen) == per_task:
                            break
                        if load[c] < share[c] and c != a and c not in chosen:
                            chosen.add(c)
                            load[c] += 1
            if len(chosen) < per_task:  # the least loaded clients other than the active's
                for c in least_loaded.take(per_task - len(chosen), chosen | {a} if chosen else (a,)):
                    chosen.add(c)
                    load[c] += 1
                    least_loaded.offer(c)

    def place_tagged(self, t: int, source: int | None) -> None:
        """The untagged preferences, each only where the tag rule allows; then the least loaded allowed
        clients, or the least loaded of those adding the most unused tag values when none is left.
        With several tag keys the rule depends on the order replicas are taken in, so the result is
        checked the way the next round's sticky pass will see it (holders in process-id order): a
        holder that pass would drop is replaced now, so an unchanged group keeps its standbys."""
        assert self.spread is not None
        spread, load = self.spread, self.load
        holding: Sequence[int] = self.lags.standby_owners[t]
        if len(holding) > self.per_task:
            holding = self._by_preference(t, holding)
        if source is not None:
            holding = [*holding, source]
        avoid: set[int] = set()
        for _ in range(self.per_task + 1):
            chosen = self._choose_tagged(t, holding, avoid)
            kept = self._keep(t, sorted(chosen), spread.start(self.active[t]), set(), self.per_task)
            if len(kept) == len(chosen):
                break
            for c in chosen:
                load[c] -= 1
            avoid |= chosen - set(kept)
            holding = kept
        self.standby_of[t] = chosen
        if len(spread.keys) > 1:
            self._lower_deficit(t)

    def _lower_deficit(self, t: int) -> bool:
        """With several tag keys, replica by replica the rule can end on a set that covers fewer values
        than another would (a sticky holder kept because it adds a value, where a pair of others adds
        two): while a replica adds fewer unused values than some other client would in its place, the
        least loaded such client takes it, where the next round's sticky pass keeps the result. Returns
        whether any did."""
        assert self.spread is not None
        spread, a, holders = self.spread, self.active[t], self.standby_of[t]
        load, capacities = self.load, self.capacities
        full = len(spread.keys)
        improved, any_improved = True, False
        while improved:
            improved = False
            for c in sorted(holders):
                used = spread.used_without(holders, c, a)
                own = spread.score(used, c)
                if own == full:
                    continue
                others = holders - {c}
                better = sorted(
                    (d for d in range(len(load)) if d != a and d not in holders and spread.score(used, d) > own),
                    key=lambda d: (load[d] / capacities[d], d),
                )
                d = next((d for d in better if self._kept_whole(t, others | {d})), None)
                if d is not None:
                    self._move(t, c, d)
                    improved = any_improved = True
                    break
        return any_improved

    def _kept_whole(self, t: int, holders: set[int]) -> bool:
        """Whether the next round's sticky pass (holders in process-id order) keeps all of `holders`."""
        assert self.spread is not None
        kept = self._keep(t, sorted(holders), self.spread.start(self.active[t]), set(), len(holders))
        return len(kept) == len(holders)

    def _keep(self, t: int, holders: Sequence[int], used: Used, taken: set[int], slots: int) -> list[int]:
        """Which sticky holders stay, at most `slots` (taking them into `used`; `taken` already hold a
        replica): each the tag rule allows, offered again while one more is taken (a tag may run out of
        unused values); then, while no client passes, one adding as many unused tag values as any client
        would (what the fallback would choose)."""
        assert self.spread is not None
        spread, a = self.spread, self.active[t]
        kept: list[int] = []
        waiting = [c for c in holders if c != a and c not in taken]
        while waiting and len(kept) < slots:
            rejected = []
            for c in waiting:
                if len(kept) < slots and spread.allows(used, c):
                    kept.append(c)
                    spread.add(used, c)
                else:
                    rejected.append(c)
            if len(rejected) == len(waiting):
                break
            waiting = rejected
        while waiting and len(kept) < slots:
            best = max(
                spread.score(used, c) for c in range(self.inputs.n_clients)
                if c != a and c not in kept and c not in taken
            )
            keep = next((c for c in waiting if spread.score(used, c) == best), None)
            if keep is None:
                break
            kept.append(keep)
            spread.add(used, keep)
            waiting.remove(keep)
        return kept

    def _choose_tagged(self, t: int, holding: Sequence[int], avoid: set[int]) -> set[int]:
        """One try at task t's replicas (adding their load), avoiding the clients in `avoid`."""
        assert self.spread is not None
        spread, load, share, per_task = self.spread, self.load, self.share, self.per_task
        a = self.active[t]
        used = spread.start(a)
        chosen: set[int] = set()

        def take(c: int) -> None:
            chosen.add(c)
            load[c] += 1
            spread.add(used, c)

        for c in self._keep(t, holding, used, chosen, per_task - len(chosen)):
            chosen.add(c)
            load[c] += 1
        for c in self.lags.holders(t):
            if len(chosen) == per_task:
                break
            if load[c] < share[c] and c != a and c not in chosen and c not in avoid and spread.allows(used, c):
                take(c)
        skip = chosen | avoid | {a}
        picked: list[int] = []
        for _ in range(per_task - len(chosen)):
            pick = None
            for need in range(len(spread.keys), -1, -1):
                pick = self.least_loaded.poll(skip, lambda d: spread.score(used, d) >= need)  # noqa: B023
                if pick is not None:
                    break
            if pick is None:
                break
            take(pick)
            skip.add(pick)
            picked.append(pick)
        for c in picked:
            self.least_loaded.offer(c)
        return chosen

    def _by_preference(self, t: int, clients: Sequence[int]) -> list[int]:
        """Caught-up clients first, then the less loaded (per capacity unit), then by process id."""
        caught_up, load, capacities = self.lags.caught_up, self.load, self.capacities
        return sorted(clients, key=lambda c: (not caught_up(t, c), load[c] / capacities[c], c))

    def _fits_instead(self, t: int, giver: int) -> Callable[[int], bool]:
        """Whether a client may hold task t's replica instead of `giver`: not the active's client, not
        a holder already, and allowed by the tag rule given the task's other replicas. With several tag
        keys, where the rule depends on the order, also such that the next round's sticky pass keeps
        every replica (see place_tagged)."""
        holders, a, spread = self.standby_of[t], self.active[t], self.spread
        if spread is None:
            return lambda d: d != a and d not in holders
        used = spread.used_without(holders, giver, a)
        if len(spread.keys) == 1:  # the common case, inlined: this runs for every candidate of every move
            values, (taken,), (distinct,) = spread.values, used, spread.distinct
            if len(taken) >= distinct:
                return lambda d: d != a and d not in holders
            return lambda d: d != a and d not in holders and values[d][0] not in taken
        others = holders - {giver}
        # Where no client passes the rule, one adding as many unused values as the giver (the task's
        # tag deficit unchanged): the sticky pass keeps such a holder, so the balance may move it.
        least = spread.score(used, giver)

        def fits(d: int) -> bool:
            return (d != a and d not in holders and spread.score(used, d) >= least
                    and self._kept_whole(t, others | {d}))

        return fits

    def _move(self, t: int, giver: int, taker: int) -> None:
        self.standby_of[t].discard(giver)
        self.standby_of[t].add(taker)
        self.load[giver] -= 1
        self.load[taker] += 1

    def rebalance(self) -> None:
        """Move standbys from clients above the ceil of their share to allowed clients below it, and
        from clients above their share to allowed clients below it, until no such move is left; a
        taker holding the task's state (most caught up first) before the least loaded. Run to
        completion, so an assignment fed back unchanged has nothing to move: a fixpoint."""
        # Alternate: a pass can open room another could not find. With equal capacities no move puts
        # its taker above the giver's load, so none raises the sum over all placed tasks of their
        # slot's level (a client's j-th task: j), and each lowers it, or the excess over the ceils, or
        # the distance to the shares, or (raising neither) the same sum over the standbys alone: this
        # ends (a chain of moves counts as its first giver's move to its last taker: the middle
        # clients' loads do not change). With capacities that differ a move toward the shares may
        # lift its taker above the giver's level by less than a task (the shares pass Kafka's
        # criterion, not that stricter one), so that argument does not hold; the passes are bounded
        # there (never reached in the tests and benchmarks: every pass moves something, and a pass at
        # the bound is a fixpoint only if it moved nothing).
        # With several tag keys a move between clients adding as many unused values can leave a task
        # where one replica could now give way to a client adding more: the deficits are lowered
        # again and the passes rerun, until none is lowered (each round lowers the total deficit,
        # and no move raises it, so this ends too).
        while True:
            passes = 0 if len(set(self.capacities)) == 1 else 4 * (len(self.load) + sum(map(len, self.standby_of)))
            while (
                self._move_down(self.ceil_share, self.ceil_share)
                | self._move_down(self.share, self.share)
                | self._even_out()
                | self._even_standbys()
            ) or self._chains() or self._pair_moves():
                passes -= 1
                if passes == 0:
                    break
            if self.spread is None or len(self.spread.keys) == 1:
                return
            if not [t for t, holders in enumerate(self.standby_of) if holders and self._lower_deficit(t)]:
                return

    def _standbys_by_client(self) -> list[list[int]]:
        """Each client's standby tasks, in task order (what the balancing passes give from)."""
        held: list[list[int]] = [[] for _ in range(len(self.load))]
        for t, holders in enumerate(self.standby_of):
            for c in holders:
                held[c].append(t)
        return held

    def _move_down(self, give_above: Sequence[int], take_below: Sequence[int]) -> bool:
        """Moves standbys from clients with load above `give_above` (most loaded first) to clients with
        load below `take_below`; a giver never goes below its limit, a taker never reaches its own.
        Returns whether anything moved."""
        load, capacities = self.load, self.capacities
        n = len(load)
        over = sorted((c for c in range(n) if load[c] > give_above[c]), key=lambda c: (-load[c] / capacities[c], c))
        takers = LeastLoaded((d for d in range(n) if load[d] < take_below[d]), load, capacities, take_below)
        if not over or not takers:
            return False
        held = self._standbys_by_client()
        holders_of, reports = self.lags.holders, self.lags.reports
        spread, active, standby_of = self.spread, self.active, self.standby_of
        no_spare: set[int] = set()
        moved, any_moved = True, False
        while moved and takers:
            moved = False
            for c in over:
                if not takers:
                    break
                for t in list(held[c]):
                    if load[c] <= give_above[c]:
                        break
                    holders = standby_of[t]
                    excluded = holders | {active[t]}
                    tagged = None if spread is None else self._fits_instead(t, c)
                    level = load[c] / capacities[c]

                    def fits(d: int) -> bool:
                        # Never to a taker as loaded as the giver: with capacities that differ, the
                        # shares could otherwise pull against Kafka's criterion (_even_out) forever.
                        return load[d] / capacities[d] < level and (tagged is None or tagged(d))  # noqa: B023

                    d = None
                    if t not in no_spare:
                        # A taker with state: a reporter besides the holders and the active's client.
                        # Givers never go below their limit, so once no reporter is below its limit,
                        # none will be.
                        r = reports[t]
                        spare = []
                        if r is not None and (len(r) > len(holders) + 1 or active[t] not in r):
                            spare = [h for h in holders_of(t) if load[h] < take_below[h] and h not in excluded]
                        if spare:
                            d = next((h for h in spare if fits(h)), None)
                        else:
                            no_spare.add(t)
                    polled = d is None
                    if polled:
                        d = takers.poll(excluded, fits)
                    if d is None:
                        if not takers:
                            break
                        continue
                    holders.discard(c)
                    holders.add(d)
                    load[c] -= 1
                    load[d] += 1
                    held[c].remove(t)
                    if polled and load[d] < take_below[d]:
                        takers.offer(d)
                    moved = any_moved = True
        return any_moved

    def _chains(self) -> bool:
        """Where no direct move is left, one through others: the giver hands a standby to a middle
        client, which hands another on, and so on, the middle clients' loads (and standbys) unchanged,
        so the chain counts as a move from its giver to its taker. Tried in the passes' order: from a
        client above its share to one below it (not above the giver's load per capacity unit), by
        Kafka's criterion, and for the standbys alone (see _even_out and _even_standbys). Returns
        whether a chain was found."""
        load, share, capacities, n = self.load, self.share, self.capacities, len(self.load)
        if any(load[d] < share[d] for d in range(n)):
            def to_share(g: int, d: int) -> bool:
                return load[d] < share[d] and load[d] / capacities[d] < load[g] / capacities[g]

            if self._chain([g for g in range(n) if load[g] > share[g]], to_share):
                return True
        lowest = min((load[d] + 1) / capacities[d] for d in range(n))

        def evens(g: int, d: int) -> bool:
            return (load[d] + 1) / capacities[d] <= (load[g] - 1) / capacities[g]

        if self._chain([g for g in range(n) if (load[g] - 1) / capacities[g] >= lowest], evens):
            return True
        if load == share:
            return False
        standbys = [load[c] - self.active_load[c] for c in range(n)]
        least = min((standbys[d] + 1) / capacities[d] for d in range(n))
        return self._chain([g for g in range(n) if standbys[g] / capacities[g] > least],
                           lambda g, d: self._evens_standbys(standbys, g, d))

    def _deficit(self, a: int, holders: set[int]) -> int:
        """A task's tag deficit: per key, the values its replicas could cover but do not."""
        assert self.spread is not None
        spread, replicas = self.spread, len(holders) + 1
        return sum(
            min(replicas, spread.distinct[k]) - len({spread.values[c][k] for c in (a, *holders)})
            for k in range(len(spread.keys))
        )

    def _pair_moves(self) -> bool:
        """Several tag keys, no single move left: two of a task's replicas move at once where neither
        could alone without raising its tag deficit (a replica of zone c on rack z and one of zone b on
        rack x trading racks, say). The client with the most standbys per capacity unit gives one to a
        client that then holds fewer than it did, and another holder of the task gives one to a client
        that also stays below the giver's level, both takers within the load rules of _evens_standbys,
        neither giver going below the lowest level: each such move lowers the standby levels sorted
        from the top, and the spread never widens. At most `pair_budget` per round,
        as the load passes may rebalance around them; the takers tried are the PAIR_TAKERS with the
        fewest standbys per capacity unit, so a round's cost stays linear in the tasks."""
        spread = self.spread
        if spread is None or len(spread.keys) == 1 or self.pair_budget <= 0:
            return False
        load, capacities, n = self.load, self.capacities, len(self.load)
        standbys = [load[c] - self.active_load[c] for c in range(n)]
        levels = [Fraction(standbys[c], capacities[c]) for c in range(n)]
        top, lowest = max(levels), min(levels)

        def spares(c: int) -> bool:  # gives one without going below the lowest level
            return Fraction(standbys[c] - 1, capacities[c]) >= lowest

        held = self._standbys_by_client()
        for g in (c for c in range(n) if levels[c] == top and spares(c)):
            takers = [d for d in range(n) if self._evens_standbys(standbys, g, d)]
            if not takers:
                continue
            takers = sorted(takers, key=lambda d: (standbys[d] / capacities[d], d))[:PAIR_TAKERS]
            for t in held[g]:
                a, holders = self.active[t], self.standby_of[t]
                base = self._deficit(a, holders)
                for h in sorted(c for c in holders - {g} if spares(c)):
                    for d in takers:
                        if d == a or d in holders:
                            continue
                        for e in takers:
                            if e in (a, d) or e in holders:
                                continue
                            after = (holders - {g, h}) | {d, e}
                            if self._deficit(a, after) <= base and self._kept_whole(t, after):
                                self._move(t, g, d)
                                self._move(t, h, e)
                                self.pair_budget -= 1
                                return True
        return False

    def _chain(self, givers: list[int], takes: Callable[[int, int], bool]) -> bool:
        """The shortest chain (breadth first, clients in order) from a giver (most loaded first) to a
        client d with takes(giver, d); applied, True, if there is one."""
        if not givers:
            return False
        load, capacities, n = self.load, self.capacities, len(self.load)
        held = self._standbys_by_client()
        # The breadth-first search from every giver asks the same question: who may hold task t instead
        # of client c (a tag rule check). Answered once per chain search, in client order.
        fitting: dict[tuple[int, int], list[int]] = {}

        def instead(t: int, c: int) -> list[int]:
            found = fitting.get((t, c))
            if found is None:
                fits = self._fits_instead(t, c)
                found = fitting[t, c] = [d for d in range(n) if fits(d)]
            return found

        for g in sorted(givers, key=lambda c: (-load[c] / capacities[c], c)):
            if not any(takes(g, d) for d in range(n) if d != g):
                continue  # no chain from g can end anywhere
            came_from: dict[int, tuple[int, int]] = {}  # client -> (client it took from, task)
            frontier = [g]
            while frontier:
                next_frontier = []
                for c in frontier:
                    on_path = self._chain_tasks(came_from, c, g)
                    for t in held[c]:
                        if t in on_path:
                            continue
                        for d in instead(t, c):
                            if d == g or d in came_from:
                                continue
                            came_from[d] = (c, t)
                            if takes(g, d):
                                self._apply_chain(came_from, d, g)
                                return True
                            next_frontier.append(d)
                frontier = next_frontier
        return False

    @staticmethod
    def _chain_tasks(came_from: dict[int, tuple[int, int]], c: int, g: int) -> set[int]:
        tasks: set[int] = set()
        while c != g:
            c, t = came_from[c]
            tasks.add(t)
        return tasks

    def _apply_chain(self, came_from: dict[int, tuple[int, int]], d: int, g: int) -> None:
        while d != g:
            c, t = came_from[d]
            self._move(t, c, d)
            d = c

    def _even_out(self) -> bool:
        """Where the shares cannot be reached (the tag rule confines replicas to some zones), Kafka's own
        criterion (balanceTasksOverThreads' shouldMoveATask): a standby moves to a client whose load per
        capacity unit, with it, stays at or below the giver's without it, a client holding the task's
        state before the least loaded. Returns whether anything
        moved."""
        load, capacities, n = self.load, self.capacities, len(self.load)
        if min((load[c] + 1) / capacities[c] for c in range(n)) > max((load[c] - 1) / capacities[c] for c in range(n)):
            return False  # no pair of clients has a move that evens them out
        held = self._standbys_by_client()
        any_moved = False

        def within_reach(c: int) -> bool:
            """Whether any other client could take one of c's standbys by the loads alone (as c gives,
            and others take, this only gets harder)."""
            level = (load[c] - 1) / capacities[c]
            return any((load[d] + 1) / capacities[d] <= level for d in range(n) if d != c)

        for c in sorted(range(n), key=lambda c: (-load[c] / capacities[c], c)):
            if not within_reach(c):
                continue
            takers = LeastLoaded(range(n), load, capacities)  # afresh: the last giver's load went down
            for t in list(held[c]):
                if not within_reach(c):
                    break
                level = (load[c] - 1) / capacities[c]
                fits = self._fits_instead(t, c)

                def evens(d: int) -> bool:
                    return (load[d] + 1) / capacities[d] <= level and fits(d)  # noqa: B023

                excluded = self.standby_of[t] | {self.active[t]}
                d = next((h for h in self.lags.holders(t) if h not in excluded and evens(h)), None)
                if d is None:
                    d = takers.poll(excluded, evens)
                    if d is None:
                        continue
                    takers.offer(d)  # re-keyed below, when its load has changed
                self._move(t, c, d)
                held[c].remove(t)
                held[d].append(t)
                any_moved = True
        return any_moved

    def _evens_standbys(self, standbys: Sequence[int], g: int, d: int) -> bool:
        """A standby from g to d leaves d with fewer standbys per capacity unit than g had, d not above
        g's load per capacity unit and within its ceil (or g above its own: where the tag rule holds
        both above their ceils, the excess only changes hands), and the loads no further from the
        shares."""
        load, capacities, share, ceil = self.load, self.capacities, self.share, self.ceil_share
        return (
            (standbys[d] + 1) * capacities[g] < standbys[g] * capacities[d]
            and (load[d] + 1) * capacities[g] <= load[g] * capacities[d]
            and (load[d] < ceil[d] or load[g] > ceil[g])
            and (load[d] < share[d] or load[g] > share[g])
        )

    def _even_standbys(self) -> bool:
        """Where the loads leave a choice (the shares cannot all be reached), the standbys alone as even
        per capacity unit as they can be: a standby moves to a client that then holds fewer per capacity
        unit than its giver did, where the taker, with it, stays within its ceil and not above the
        giver's load per capacity unit, and the loads come no further from the shares. Returns whether
        anything moved."""
        load, capacities = self.load, self.capacities
        n = len(load)
        if load == self.share:
            return False  # every move would take a giver below its share and a taker above its own
        standbys = [load[c] - self.active_load[c] for c in range(n)]
        by_level = sorted(range(n), key=lambda c: (standbys[c] / capacities[c], c))
        held = self._standbys_by_client()
        any_moved = False
        for g in reversed(by_level):
            for t in list(held[g]):
                takers = [d for d in by_level if self._evens_standbys(standbys, g, d)]
                if not takers:
                    break
                fits = self._fits_instead(t, g)
                d = next((d for d in takers if fits(d)), None)
                if d is None:
                    continue
                self._move(t, g, d)
                held[g].remove(t)
                held[d].append(t)
                standbys[g] -= 1
                standbys[d] += 1
                any_moved = True
        return any_moved

    def start_moves(self, pending_target: Mapping[int, int], active: Sequence[int]) -> None:
        """From the plan around the moved actives to this round's (`active`): a move's source runs the
        task for now, so a replica planned there is held by the move's target meanwhile (a free
        warm-up; both loads stay as planned). Where the source holds none but two or more planned
        replicas are caught up, the target takes the slot of the most loaded of those (a caught-up
        replica stays, and the one that gave way keeps its state for the next round): moves then do not
        wait for `max.warmup.replicas` one after another. Else the target's warm-up comes out of
        `max.warmup.replicas` (giving it the slot of a replica that is not caught up was tried: that
        replica then waits for a warm-up after the move, fewer rounds overall but more in some
        groups)."""
        self.active = active
        caught_up, load, capacities = self.lags.caught_up, self.load, self.capacities
        for t, target in pending_target.items():
            holders = self.standby_of[t]
            if active[t] in holders:
                holders.discard(active[t])
                holders.add(target)
                continue
            hot = [c for c in holders if caught_up(t, c)]
            if len(hot) < 2:
                continue
            x = max(hot, key=lambda c: (load[c] / capacities[c], -c))
            if self._fits_instead(t, x)(target):
                self._move(t, x, target)

    def keep_caught_up(self, tasks: Sequence[int]) -> list[PendingMove]:
        """Where no planned replica of a task is caught up but a caught-up client (not the active's)
        could hold one, that client takes the replica of the planned client furthest behind, which
        waits for a warm-up: one the tag rule allows if there is one, else any (the tag spread, like the
        balance, is reached when the warm-up has caught up). One caught-up replica per task is kept this
        way, not more: each costs a probing round per max.warmup.replicas before balance is reached.
        Returns the waiting replicas, most advanced first."""
        lags = self.lags
        default, reports, caught_up = lags.default_caught_up, lags.reports, lags.caught_up
        waiting: list[PendingMove] = []
        # A task caught up everywhere (but on state of unknown freshness) has nothing to keep: where
        # every task is, only those with such state are looked at.
        if all(default):
            tasks = sorted(lags.with_unknown)  # stateful tasks only
        for t in tasks:
            if (default[t] and t not in lags.with_unknown) or not reports[t]:  # caught up nowhere: neither
                continue
            planned = self.standby_of[t]
            if any(caught_up(t, c) for c in planned):
                continue
            d = max(planned, key=lambda c: (lags.rank(t, c), -c))  # the furthest behind
            a = self.active[t]
            hot = [h for h in self._caught_up_clients(t) if h != a and h not in planned]
            if not hot:
                continue
            # One the tag rule allows if there is one; else the tag spread waits with the warm-up.
            fits = self._fits_instead(t, d)
            self._move(t, d, next((h for h in hot if fits(h)), hot[0]))
            waiting.append(PendingMove(t, d))
        waiting.sort(key=lambda m: (lags.rank(m.task, m.target), m.task))
        return waiting

    def _caught_up_clients(self, t: int) -> list[int]:
        """Most caught up first; where the task is caught up by default, every client without a
        report (by process id) after the caught-up holders."""
        lags = self.lags
        hot = [h for h in lags.holders(t) if lags.caught_up(t, h)]
        if lags.default_caught_up[t]:
            reported = lags.reports[t] or {}
            hot += [c for c in range(self.inputs.n_clients) if c not in reported]
        return hot
