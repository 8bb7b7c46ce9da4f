"""How many tasks of a pool each client should run, and the sticky start of a pool's placement.

Stateful tasks (the first pool): every client gets floor(n * capacity / total) or the ceil. With equal
capacities the leftover tasks go one each to clients whose share is fractional, first to those owning
more than the floor (keeping them costs no move), then the largest fractional share, then by
`RoundInputs.rank` (process id order, or with rack-aware tags small zones first). With capacities that
differ, floor and ceil alone can leave a small client at 0 tasks per thread while a large one runs 1:
the quotas are then as even per thread as the floors and ceils allow (thread_balance.py), the same
preference choosing among equally even ones, and what the owners run now staying if it is one of
them; below the floor (down to the subtopology floors added up, with one subtopology one below) where
that makes the threads more even still (Kafka's criterion balances per thread and knows no floors;
never above the ceil). Where every client holds a replica of every task (num.standby.replicas >=
clients - 1, with rack tags too: they only order the replicas then), each task a client runs is a
standby less there: the standbys most even first, then the threads, among the counts Kafka's
criterion leaves as they are (with stateless tasks too, where the totals fix the threads, among any
counts). So too where only some clients hold every task (a one-client zone: forced_replicas.py; the
others counted at their average), but never before the threads (the stateless pool may not make up
for them). Then, where capacities differ and standbys are configured, towards counts that leave the
standbys room to spread more evenly (standby_room.py), within Kafka's tolerance for the threads
(kafka_criterion.py). With several subtopologies and equal capacities the quotas come out of the subtopology
targets (spread.py); otherwise the quotas are ones such targets exist for (ceil_matching.py).

Stateless tasks (placed on top of the stateful ones): each client runs the floor or the ceil of its
capacity share of each stateless subtopology (as Kafka spreads every subtopology), so its quota lies
between the sums of those floors and ceils; within that, what balances the threads is the total, so
the tasks fill up the clients whose load per capacity unit is lowest (as Kafka's least-loaded placement
of stateless tasks). Ties: first clients owning more of the pool than they have been given so far (an
unchanged group keeps its quotas), then those holding fewer standbys per capacity unit (a caught-up
standby stays where it is rather than move for a stateless task that could run elsewhere: a warm-up and
a probing round), then rank.

The stateless quotas look at ownership only among clients that tie on load. The subtopology targets
look at it only through claims that survive a cooperative move's second round: a preference for owners
there could change between the two rounds (a giver shedding crowded tasks owns less than its quota in
the second) and move tasks back and forth. With one subtopology an owner only sheds above its quota, so
the preference holds.

`keep_owned`: owners keep their tasks up to the quota and within their target of each subtopology
(spread.py)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import repeat
from typing import Any, NamedTuple

from .forced_replicas import ForcedReplicas
from .kafka_criterion import kafka_counts, kafka_leaves
from .ownership import NO_OWNER
from .spread import SubtopologyShares
from .standby_room import StandbyRoom
from .thread_balance import balanced_counts, load_spread, possible, windowed_counts


def capacity_quotas(
    n_tasks: int,
    capacities: Sequence[int],
    rank: Sequence[int],
    owned: Sequence[int],
    sizes: Sequence[int] | None = None,
    bounds: JointBounds | None = None,
    forced: ForcedReplicas | None = None,
    room: StandbyRoom | None = None,
) -> list[int]:
    """Within the floor and ceil of each capacity share, as even per thread as they can be
    (thread_balance.py); sizes: the pool's subtopology sizes when it has several. Where capacities
    differ, the floors and ceils of the subtopology shares added up (share_bounds) are used instead
    when they let the threads be more even (a large client one task below its share of the pool, as
    Kafka's balanceTasksOverThreads may leave it; with one subtopology, one below the floor), and
    `bounds` (joint_bounds) when given. forced: clients that hold a replica of every task
    (forced_replicas.py), so each task such a client runs is a standby less there: among equally even
    quotas, the tasks go where the standbys per thread are highest (a one-thread client next to a
    three-thread one otherwise holds three times the standbys per thread; a one-client zone holds
    every task). Where every client holds every task, not by ownership (a cooperative move's second
    round owns less, and must get the same quotas); else ownership decides among clients the
    standbys leave level (the clients not holding every task all count at their average). room: where
    capacities differ, counts that leave the standbys room to spread more evenly are taken among those
    Kafka's criterion leaves as they are (_roomier_standbys)."""
    total = sum(capacities)
    floors = [n_tasks * cap // total for cap in capacities]
    ceils = [-(-n_tasks * cap // total) for cap in capacities]
    nothing = [0] * len(capacities)

    everywhere = forced is not None and forced.everywhere

    def standbys(c: int, count: int) -> Fraction | int:
        return 0 if forced is None else -forced.level(c, count, n_tasks, capacities)

    def unowned_order(c: int, count: int) -> tuple[Fraction | int, int, int]:
        if everywhere:
            return (standbys(c, count), 0, rank[c])
        return (standbys(c, count), -(n_tasks * capacities[c] % total), rank[c])

    def order(c: int, count: int) -> tuple[Fraction | int, bool, int, int]:
        level, fraction, place = unowned_order(c, count)
        return (level, not everywhere and owned[c] <= floors[c], fraction, place)

    quotas = balanced_counts(n_tasks, capacities, nothing, floors, ceils, order, sizes)
    if bounds is None and len(set(capacities)) > 1:
        # Below the floor where that makes the threads more even (a three-thread client at 4 of its 5
        # lets the one-thread clients run 2 each, not 1 and 2), as Kafka's criterion allows: down to
        # the subtopology floors added up, with one subtopology one below. Not by ownership: a
        # cooperative move's second round owns less, and must get the same quotas as its first.
        below = share_bounds(sizes, capacities)[0] if sizes else [max(0, f - 1) for f in floors]
        wider = windowed_counts(n_tasks, capacities, nothing, below, ceils, unowned_order, sizes)
        if wider is not None and load_spread(wider, capacities, nothing) < load_spread(quotas, capacities, nothing):
            floors, quotas = below, wider
    pool_bounds = floors, ceils
    joint = None
    if bounds is not None:
        joint = windowed_counts(n_tasks, capacities, nothing, bounds.lo, bounds.hi, order, sizes)
    if bounds is not None and joint is not None:
        floors, ceils, quotas = list(bounds.lo), list(bounds.hi), joint

    def as_even(counts: list[int], than: list[int]) -> bool:
        """Threads as even, and with clients holding every task, the standbys too (the stateless pool
        may not even out what the standbys would cost the threads). Where every client holds every
        task, the standbys first: with joint bounds, which fix every client's total, among any counts;
        else among those Kafka's criterion leaves as they are (random seed 119 of the quality bench: 66
        tasks on a three-thread and a two-thread client; 40 and 26 put the standbys 11 1/3 per thread
        apart, 39 and 27, as Kafka's assignor has them, 10 1/2, the threads then 1/2 apart, not 1/3)."""
        threads = load_spread(counts, capacities, nothing), load_spread(than, capacities, nothing)
        if forced is None:
            return threads[0] <= threads[1]
        left = forced.spread(counts, capacities), forced.spread(than, capacities)
        if everywhere:
            return (joint is not None or kafka_leaves(counts, capacities)) and (left[0], threads[0]) <= (
                left[1], threads[1])
        return threads[0] <= threads[1] and left[0] <= left[1]

    if forced is not None and len(set(capacities)) > 1:
        width = Fraction(n_tasks) if everywhere else load_spread(quotas, capacities, nothing)
        quotas = _evener_standbys(n_tasks, capacities, floors, ceils, quotas, width, unowned_order, as_even, sizes)
    roomy = room if len(set(capacities)) > 1 else None
    both = bounds if joint is not None else None
    if roomy is not None:  # searched within the pool's own bounds, the joint ones aside (_roomier_standbys)
        quotas = _roomier_standbys(quotas, capacities, *pool_bounds, sizes, roomy, both)
    # Where capacities differ, several counts can be as even: what the owners run now, if it is one of
    # them, stays (an unchanged group keeps its assignment).
    if (
        quotas != owned
        and sum(owned) == n_tasks
        and all(f <= o <= c for f, o, c in zip(floors, owned, ceils, strict=True))
        and as_even(list(owned), quotas)
        and (roomy is None or _room_key(owned, capacities, roomy, both) <= _room_key(quotas, capacities, roomy, both))
        and possible(owned, sizes, capacities)
    ):
        return list(owned)
    return quotas


def _room_key(
    counts: Sequence[int], capacities: Sequence[int], room: StandbyRoom, both: JointBounds | None
) -> tuple[Fraction, Fraction]:
    """The standbys' lowest spread (standby_room.py), then the threads' (with the stateless pool where
    `both`)."""
    spread = room.spread(counts, capacities)
    totals = list(counts) if both is None else both.totals(counts, capacities)
    worst = Fraction(sum(counts) + (both.stateless if both else 0))
    return (worst if spread is None else spread,
            worst if totals is None else load_spread(totals, capacities, [0] * len(counts)))


def _roomier_standbys(
    quotas: list[int],
    capacities: Sequence[int],
    floors: Sequence[int],
    ceils: Sequence[int],
    sizes: Sequence[int] | None,
    room: StandbyRoom,
    both: JointBounds | None,
) -> list[int]:
    """From `quotas`, one task at a time from one client to another (within floors and ceils), while
    that lets the standbys spread more evenly (standby_room.py) and Kafka's criterion leaves the counts
    as they are: Kafka's assignor takes whatever its criterion leaves, so the threads stay within its
    tolerance: no less even than its own balancing leaves them (random seed 249 of the quality bench:
    capacities 1, 2, 1 and 1, 9 tasks, two one-client zones among three; 2, 4, 1 and 2 let the
    standbys lie 1/2 closer than 2, 3, 2 and 2 do, the threads 1 apart instead of 1/2, as Kafka's
    assignor has them). With the stateless pool (`both`: joint_bounds), the threads count both pools,
    the stateless tasks filling up around the stateful ones, and the stateful counts may leave the
    joint bounds for their floors and ceils (random seed 60). Not by ownership (a cooperative move's
    second round owns less)."""
    best, key = quotas, _room_key(quotas, capacities, room, both)
    n = len(quotas)
    tolerance: Fraction | None = None  # computed when first needed
    while True:
        found: tuple[tuple[Fraction, Fraction], list[int]] | None = None
        # Clients alike in capacity, count, bounds and holding every task or not are interchangeable:
        # one move per pair of kinds (the first clients of each), so a pass costs kinds^2, not clients^2.
        kinds: dict[tuple[int, int, int, int, bool], list[int]] = {}
        for c in range(n):
            kinds.setdefault((capacities[c], best[c], floors[c], ceils[c], room.holds_all[c]), []).append(c)
        pairs = ((a[0], b[0] if b is not a else b[1]) for a in kinds.values() for b in kinds.values()
                 if b is not a or len(a) > 1)
        for i, j in pairs:
            if best[i] <= floors[i] or best[j] >= ceils[j]:
                continue
            counts = list(best)
            counts[i] -= 1
            counts[j] += 1
            if not kafka_leaves(counts, capacities):
                continue
            k = _room_key(counts, capacities, room, both)
            if not k[0] < key[0] or (found is not None and k >= found[0]):
                continue
            if tolerance is None:
                kafka = kafka_counts(sum(quotas), capacities, both.stateless if both else 0)
                tolerance = max(load_spread(kafka, capacities, [0] * n), key[1])
            if k[1] <= tolerance and possible(counts, sizes, capacities):
                found = (k, counts)
        if found is None:
            return best
        key, best = found


def _evener_standbys(
    n_tasks: int,
    capacities: Sequence[int],
    floors: Sequence[int],
    ceils: Sequence[int],
    quotas: list[int],
    width: Fraction,
    order: Callable[[int, int], Any],
    as_even: Callable[[list[int], list[int]], bool],
    sizes: Sequence[int] | None,
) -> list[int]:
    """Of the counts whose loads per thread lie in a window `width` wide (the quotas': the narrowest
    window search keeps one of them), filled in `order` (the highest standbys per thread first), the
    best by `as_even` when every client holds every task (capacity_quotas)."""
    best = quotas
    tops = {Fraction(q, cap) for cap, f, c in zip(capacities, floors, ceils, strict=True) for q in range(f, c + 1)}
    for top in sorted(tops):
        lo = [max(f, math.ceil((top - width) * cap)) for f, cap in zip(floors, capacities, strict=True)]
        hi = [min(c, math.floor(top * cap)) for c, cap in zip(ceils, capacities, strict=True)]
        if any(map(int.__gt__, lo, hi)) or not sum(lo) <= n_tasks <= sum(hi):
            continue
        fill = list(lo)
        for _ in range(n_tasks - sum(fill)):
            c = min((c for c in range(len(fill)) if fill[c] < hi[c]), key=lambda c: order(c, fill[c]))
            fill[c] += 1
        if fill != best and as_even(fill, best) and possible(fill, sizes, capacities):
            best = fill
    return best


def subtopology_sizes(pool: Sequence[int], subtopology: Sequence[int]) -> list[int] | None:
    """The pool's subtopology sizes, None when it has one subtopology."""
    sizes = list(Counter(map(subtopology.__getitem__, pool)).values())
    return sizes if len(sizes) > 1 else None


def share_bounds(sizes: Sequence[int], capacities: Sequence[int]) -> tuple[list[int], list[int]]:
    """Per client, the floors and the ceils of its capacity share of each subtopology, added up: the
    counts a pool's subtopology targets can reach."""
    total = sum(capacities)
    lo = [sum(size * cap // total for size in sizes) for cap in capacities]
    hi = [sum(-(-size * cap // total) for size in sizes) for cap in capacities]
    return lo, hi


class JointBounds(NamedTuple):
    """joint_bounds: each client's stateful count within [lo, hi]; the stateless pool (`stateless`
    tasks, subtopology sizes `stateless_sizes` where several) within [stateless_lo, stateless_hi]."""

    lo: list[int]
    hi: list[int]
    stateless: int
    stateless_lo: list[int]
    stateless_hi: list[int]
    stateless_sizes: list[int] | None

    def totals(self, counts: Sequence[int], capacities: Sequence[int]) -> list[int] | None:
        """Each client's tasks of both pools once the stateless ones fill up around the stateful `counts`
        (as filling_quotas, ties aside); None where they cannot."""
        fill = windowed_counts(self.stateless, capacities, counts, self.stateless_lo, self.stateless_hi,
                               lambda c, q: (Fraction(counts[c] + q + 1, capacities[c]), c), self.stateless_sizes)
        return None if fill is None else [a + b for a, b in zip(counts, fill, strict=True)]


def joint_bounds(
    stateful: Sequence[int],
    stateless: Sequence[int],
    subtopology: Sequence[int],
    capacities: Sequence[int],
    rank: Sequence[int],
) -> JointBounds | None:
    """Where capacities differ and both pools have tasks, bounds on each client's stateful count that
    leave the stateless pool room to even out the threads: the totals of both pools are chosen first
    (as even per thread as both pools' share bounds allow), and each stateful count must leave a
    stateless count within its bounds. Choosing the stateful quotas alone could leave a client two
    tasks off its share that the stateless pool cannot make up. None: no such counts, or no need."""
    if not stateful or not stateless or len(set(capacities)) == 1:
        return None
    lo_s, hi_s = share_bounds(subtopology_sizes(stateful, subtopology) or [len(stateful)], capacities)
    lo_l, hi_l = share_bounds(subtopology_sizes(stateless, subtopology) or [len(stateless)], capacities)
    n_s, n_l = len(stateful), len(stateless)
    both_lo = [a + b for a, b in zip(lo_s, lo_l, strict=True)]
    both_hi = [a + b for a, b in zip(hi_s, hi_l, strict=True)]
    totals = windowed_counts(n_s + n_l, capacities, [0] * len(capacities), both_lo, both_hi,
                             lambda c, q: (Fraction(q + 1, capacities[c]), rank[c]))
    if totals is None:
        return None
    lo = [max(a, t - b) for a, t, b in zip(lo_s, totals, hi_l, strict=True)]
    hi = [min(a, t - b) for a, t, b in zip(hi_s, totals, lo_l, strict=True)]
    if not sum(lo) <= n_s <= sum(hi):
        return None
    return JointBounds(lo, hi, n_l, lo_l, hi_l, subtopology_sizes(stateless, subtopology))


def filling_quotas(
    pool: Sequence[int],
    subtopology: Sequence[int],
    capacities: Sequence[int],
    prior: Sequence[int],
    rank: Sequence[int],
    owned: Sequence[int],
    standbys: Sequence[int],
    spread: bool = True,
) -> list[int]:
    """Stateless quotas on top of `prior` (each client's tasks from earlier pools), see the module docstring;
    without `spread`, regardless of the subtopology shares (any count from none to all). Among clients as
    loaded, those that own more of the pool than they have been given first (nothing moves: an unchanged group
    keeps its quotas), then those holding fewer `standbys` per capacity unit: the standbys stay where they are
    (no warm-up) if the stateless tasks go around them. Where capacities differ, every count within the
    narrowest window of loads (thread_balance.py) is as even per thread, so the owners keep theirs first there
    (random seed 164 of the quality bench: a three-thread client joining took a task from a two-thread one, the
    threads 1/2 apart either way)."""
    sizes = subtopology_sizes(pool, subtopology) if spread else None
    lo, hi = share_bounds(sizes or [len(pool)], capacities)  # one subtopology: the pool
    if not spread:
        lo, hi = [0] * len(capacities), [len(pool)] * len(capacities)

    def order(c: int, q: int) -> tuple[float, bool, float, int]:
        return (prior[c] + q + 1) / capacities[c], owned[c] <= q, standbys[c] / capacities[c], rank[c]

    if len(set(capacities)) > 1:
        sticky = windowed_counts(len(pool), capacities, prior, lo, hi, lambda c, q: (owned[c] <= q, order(c, q)), sizes)
        if sticky is not None:
            return sticky
    return balanced_counts(len(pool), capacities, prior, lo, hi, order, sizes)


class Kept(NamedTuple):
    """The sticky start of a pool's placement: `target` mapping each kept task to its owner, `load`
    counting the tasks each client keeps, and `unassigned` (unowned or given up, in no particular
    order: callers sort it)."""

    target: dict[int, int]
    load: list[int]
    unassigned: list[int]


def owned_counts(pool: Sequence[int], owner: Sequence[int], n_clients: int) -> list[int]:
    """How many of the pool's tasks each client owns (counted in C)."""
    counts = Counter(map(owner.__getitem__, pool))
    return list(map(counts.get, range(n_clients), repeat(0)))


def keep_owned(
    pool: Sequence[int],
    owner: Sequence[int],
    quotas: Sequence[int],
    shed_order: Callable[[int], tuple[bool, int]],
    shares: SubtopologyShares | None = None,
) -> Kept:
    """Each owner keeps its tasks of `pool` up to its quota and, with `shares` (started on the pool),
    within its target of each subtopology, so nothing moves that balance does not need; an owner above
    a limit gives up the tasks that sort last by `shed_order`. `shares` is left counting the kept
    tasks."""
    owned: list[list[int]] = [[] for _ in quotas]
    for t in pool:
        if owner[t] != NO_OWNER:
            owned[owner[t]].append(t)
    crowded = shares.crowded() if shares is not None else set()
    target: dict[int, int] = {}
    unassigned = [t for t in pool if owner[t] == NO_OWNER]
    for c, tasks in enumerate(owned):
        if c in crowded or len(tasks) > quotas[c]:
            tasks.sort(key=shed_order)
            if c in crowded:
                assert shares is not None
                within = shares.keep_within(tasks, c)
                unassigned.extend(t for t in tasks if t not in within)
                tasks = owned[c] = [t for t in tasks if t in within]
            if len(tasks) > quotas[c]:
                shed = tasks[quotas[c]:]
                unassigned.extend(shed)
                del tasks[quotas[c]:]
                if shares is not None:
                    shares.remove(shed, c)
        for t in tasks:
            target[t] = c
    return Kept(target, [len(o) for o in owned], unassigned)
