"""Each subtopology spread over the clients, as Kafka's assignors balance each subtopology's tasks
across clients: otherwise one client can end up with most partitions of one subtopology, and when that
subtopology runs hot, so does the client.

Client c's share of subtopology g of a pool is size(g) x weight(c) / total weight, the weight being
its capacity, in both pools (stateless tasks too: a stateless subtopology running hot loads its
clients as much). It runs target(g, c) tasks of g, the floor or the ceil of that share, the targets
adding up to each subtopology's size, and to each client's quota: given (quotas.py chooses quotas
such targets exist for, see ceil_matching.py), or else within the floor and ceil of its weight share
of the pool. Such roundings exist (matrix rounding), and placing every task within its target then
never gets stuck.

A client's floors leave it some ceils to take ("extras"); a subtopology hands out `size - floors`
extras, at most one per client, to clients whose share is fractional. Clients holding a replica of
every task while others do not (a one-client zone: forced_replicas.py) have their total set to the
ceil of their share first, as far as the pool allows (by rank). The extras are dealt
subtopology by subtopology, those with the fewest candidates per extra first, each to the clients
already running more than the floor ("claims"), then to those with the most extras left to take,
then by rank (process id; with rack-aware tags, small zones first: see round_inputs.leftover_rank);
augmenting paths finish a dealing the greedy leaves short. A claim the result does
not honour is dropped and the dealing repeated, until every remaining claim is honoured: so the
targets of an unchanged group honour every claim and it keeps its assignment (a fixpoint), and a
client giving up tasks under cooperative rebalancing, whose next round sees only the honoured claims,
gets the same targets again. When fewer clients lack an extra than have one, who gets the floor is
dealt instead (the same problem, fewer entries; the floors to the last ranked first, so the rank
prefers the same clients either way). With one subtopology in the pool the target is the
quota, so nothing is tracked."""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from itertools import compress, islice, repeat
from operator import gt, sub


class SubtopologyShares:
    """count[g][c]: tasks of subtopology g placed on client c so far; limit[g][c]: its target."""

    __slots__ = ("group", "count", "limit", "_tasks", "_rank")

    def __init__(self, pool: Sequence[int], group: Sequence[int], rank: Sequence[int]) -> None:
        """rank: the clients' order when they tie (RoundInputs.rank; its length is the client count)."""
        n_clients = len(rank)
        self.group, self._rank = group, rank
        # The pool is in task order and subtopology ids ascend with it: each subtopology is a run.
        groups = list(map(group.__getitem__, pool))
        self._tasks = {
            g: pool[bisect.bisect_left(groups, g) : bisect.bisect_right(groups, g)] for g in dict.fromkeys(groups)
        }
        self.count = {g: [0] * n_clients for g in self._tasks}
        self.limit: dict[int, list[int]] = {}

    @classmethod
    def of(cls, pool: Sequence[int], group: Sequence[int], rank: Sequence[int]) -> SubtopologyShares | None:
        """None when the pool (task numbers in order, subtopology ids ascending with them) has one
        subtopology."""
        if group[pool[0]] == group[pool[-1]]:
            return None
        return cls(pool, group, rank)

    def room(self, t: int, c: int) -> bool:
        g = self.group[t]
        return self.count[g][c] < self.limit[g][c]

    def add(self, t: int, c: int) -> None:
        self.count[self.group[t]][c] += 1

    def remove(self, tasks: Sequence[int], c: int) -> None:
        for t in tasks:
            self.count[self.group[t]][c] -= 1

    def start(
        self,
        owner: Sequence[int],
        weights: Sequence[int],
        quotas: Sequence[int] | None,
        ceils_first: Sequence[bool] = (),
    ) -> list[int]:
        """Counts what the owners hold, sets the targets (see the module docstring) and returns each
        client's quota: its targets added up. Counted in C per subtopology: this runs on every
        rebalance. ceils_first: without `quotas`, clients whose total is the ceil of their share (as
        many as the pool allows, by rank) before any other client's, claims included: with equal
        capacities, those holding a replica of every task (forced_replicas.py), each task they run a
        standby less where the standbys pile up."""
        n = len(weights)
        if owner.count(-1) != len(owner):  # someone owns some task (none does in a fresh group)
            for g, tasks in self._tasks.items():
                held = Counter(map(owner.__getitem__, tasks))
                self.count[g] = list(map(held.get, range(n), repeat(0)))
        return self._set_targets(weights, quotas, ceils_first)

    def crowded(self) -> set[int]:
        """The clients holding more of some subtopology than their target (as `start` counted)."""
        n = len(next(iter(self.count.values())))
        return set().union(*(compress(range(n), map(gt, self.count[g], self.limit[g])) for g in self.count))

    def deal(self, unassigned: Sequence[int], target: dict[int, int]) -> None:
        """Places `unassigned` (task order) within the targets, subtopology by subtopology: each
        subtopology's tasks go to the clients below their target of it in process-id order, starting
        where the previous subtopology stopped, so the tasks of one partition spread over clients."""
        by_group: dict[int, list[int]] = defaultdict(list)
        for t in unassigned:
            by_group[self.group[t]].append(t)
        start = 0
        for g, tasks in by_group.items():
            count = self.count[g]
            room = list(map(sub, self.limit[g], count))
            clients = list(compress(range(len(count)), room))
            cut = bisect.bisect_left(clients, start)
            it = iter(tasks)
            for c in clients[cut:] + clients[:cut]:
                took = list(islice(it, room[c]))
                for t in took:
                    target[t] = c
                count[c] += len(took)
                if took:
                    start = c + 1
                if len(took) < room[c]:
                    break

    def keep_within(self, tasks: Sequence[int], c: int) -> set[int]:
        """Of client c's `tasks` (preferred first), those within its targets; the counts drop by the
        others."""
        kept: Counter[int] = Counter()
        within: set[int] = set()
        for t in tasks:
            g = self.group[t]
            if kept[g] < self.limit[g][c]:
                kept[g] += 1
                within.add(t)
        for g in {self.group[t] for t in tasks}:
            self.count[g][c] = kept[g]
        return within

    def _set_targets(
        self, weights: Sequence[int], quotas: Sequence[int] | None, ceils_first: Sequence[bool]
    ) -> list[int]:
        n, total = len(weights), sum(weights)
        pool_size = sum(map(len, self._tasks.values()))
        by_weight: dict[int, list[int]] = defaultdict(list)  # clients of equal weight share everything here
        for c, w in enumerate(weights):
            by_weight[w].append(c)
        fractional: dict[int, set[int]] = {}  # per subtopology, the clients whose share is not whole
        extras: dict[int, int] = {}  # per subtopology, the ceils it hands out
        floor_total: Counter[int] = Counter()  # per weight, the floors a client of that weight gets
        fraction_count: Counter[int] = Counter()  # per weight, the subtopologies it has a fractional share of
        claims: dict[int, set[int]] = {}  # per subtopology, the clients running more than the floor
        for g, tasks in self._tasks.items():
            size = len(tasks)
            floor_of = {w: size * w // total for w in by_weight}
            limit = self.limit[g] = list(map(floor_of.__getitem__, weights))
            split = [w for w in by_weight if size * w % total]
            fractional[g] = set().union(*(by_weight[w] for w in split))
            extras[g] = size - sum(floor_of[w] * len(clients) for w, clients in by_weight.items())
            floor_total.update(floor_of)
            fraction_count.update(split)
            claims[g] = fractional[g].intersection(compress(range(n), map(gt, self.count[g], limit)))
        floors = [floor_total[w] for w in weights]
        frac_of = [fraction_count[w] for w in weights]
        if quotas is None:  # each total within the floor and ceil of its weight share of the pool
            lo = [pool_size * w // total - f for w, f in zip(weights, floors, strict=True)]
            hi = [-(-pool_size * w // total) - f for w, f in zip(weights, floors, strict=True)]
            spare = pool_size - sum(low + f for low, f in zip(lo, floors, strict=True))
            for c in sorted(compress(range(n), ceils_first), key=self._rank.__getitem__):
                if spare >= hi[c] - lo[c]:
                    spare -= hi[c] - lo[c]
                    lo[c] = hi[c]
        else:
            lo = hi = [q - f for q, f in zip(quotas, floors, strict=True)]
        n_extras = sum(extras.values())
        ceils_mode = n_extras <= sum(map(len, fractional.values())) - n_extras
        while True:
            if ceils_mode:  # deal the extras
                ceil = _deal(extras, fractional, lo, hi, claims, True, self._rank)
                lost = {g: claims[g] - ceil[g] for g in claims}
            else:  # deal the floors among the fractional clients: the complement
                floored = _deal(
                    {g: len(fractional[g]) - extras[g] for g in extras},
                    fractional,
                    [f - h for f, h in zip(frac_of, hi, strict=True)],
                    [f - low for f, low in zip(frac_of, lo, strict=True)],
                    claims,
                    False,
                    [n - 1 - r for r in self._rank],  # the floors go to the last ranked first
                )
                lost = {g: claims[g] & floored[g] for g in claims}
            if not any(lost.values()):
                break
            for g, clients in lost.items():
                claims[g] -= clients
        # Each client's quota: its targets added up.
        out = list(floors) if ceils_mode else [f + k for f, k in zip(floors, frac_of, strict=True)]
        for g in self._tasks:
            limit = self.limit[g]
            if ceils_mode:
                for c in ceil[g]:
                    limit[c] += 1
                    out[c] += 1
                continue
            if len(fractional[g]) == n:  # one list operation for the usual all-fractional case
                limit = self.limit[g] = [v + 1 for v in limit]
            else:
                for c in fractional[g]:
                    limit[c] += 1
            for c in floored[g]:
                limit[c] -= 1
                out[c] -= 1
        return out


def _deal(
    wanted: dict[int, int],
    eligible: dict[int, set[int]],
    lo: Sequence[int],
    hi: Sequence[int],
    claimed: dict[int, set[int]],
    prefer_claimed: bool,
    rank: Sequence[int],
) -> dict[int, set[int]]:
    """Per subtopology g, `wanted[g]` distinct clients of `eligible[g]`, client c taken between
    `lo[c]` and `hi[c]` times in all: first up to `lo`, then up to `hi`, each pass greedy and finished
    by augmenting paths, which never take a client's count down. The greedy takes the subtopologies
    with the fewest candidates per client wanted first; each takes the clients in `claimed[g]` first
    (or last, without `prefer_claimed`), then those with the most room left, then by `rank`. A
    subtopology left short (never, when the bounds allow a dealing) takes every eligible client, so
    placement can finish regardless."""
    n = len(lo)
    taken = [0] * n
    dealt: dict[int, set[int]] = {g: set() for g in wanted}
    remaining = dict(wanted)
    order = sorted(wanted, key=lambda g: (len(eligible[g]) - wanted[g], g))
    for bound in (lo, hi):
        left = [b - t for b, t in zip(bound, taken, strict=True)]
        if not any(left):
            continue
        rooms = _Rooms(left, rank)
        for g in order:
            k = remaining[g]
            if not k:
                continue
            fits, first, done = eligible[g], claimed.get(g, set()), dealt[g]

            def claimants(most: int) -> list[int]:
                ready = (c for c in first if left[c] > 0 and c in fits and c not in done)  # noqa: B023
                return sorted(ready, key=lambda c: (-left[c], rank[c]))[:most]  # noqa: B023

            picks = claimants(k) if prefer_claimed else []
            skip = set(picks) if prefer_claimed else first
            picks += rooms.first(k - len(picks), lambda c: c in fits and c not in skip and c not in done)  # noqa: B023
            if len(picks) < k and not prefer_claimed:
                picks += claimants(k - len(picks))
            for c in picks:
                dealt[g].add(c)
                taken[c] += 1
                rooms.take(c)
            remaining[g] -= len(picks)
        if any(rooms.left):
            for g in order:
                while remaining[g]:
                    end = _augment(g, dealt, eligible, rooms.left)
                    if end is None:
                        break
                    taken[end] += 1
                    remaining[g] -= 1
    for g in order:
        if remaining[g]:
            dealt[g] = set(eligible[g])
    return dealt


class _Rooms:
    """The clients by room left (most first), then by rank: buckets per room, each in rank order, so a
    greedy pick costs the clients it passes over, not a sort of all of them."""

    def __init__(self, left: list[int], rank: Sequence[int]) -> None:
        self.left, self.rank = left, rank
        self.buckets: list[list[int]] = [[] for _ in range(max(left, default=0) + 1)]
        for c in sorted(range(len(left)), key=rank.__getitem__):
            if left[c] > 0:
                self.buckets[left[c]].append(c)

    def first(self, k: int, accept: Callable[[int], bool]) -> list[int]:
        picks: list[int] = []
        for bucket in reversed(self.buckets):
            for c in bucket:
                if len(picks) == k:
                    return picks
                if accept(c):
                    picks.append(c)
        return picks

    def take(self, c: int) -> None:
        room = self.left[c]
        self.buckets[room].remove(c)
        self.left[c] = room - 1
        if room > 1:
            bisect.insort(self.buckets[room - 1], c, key=self.rank.__getitem__)


def _augment(g: int, dealt: dict[int, set[int]], eligible: dict[int, set[int]], left: list[int]) -> int | None:
    """One more client for subtopology g along an alternating path, found breadth first: g takes a
    client c1; if c1 has no room left, a subtopology holding c1 gives it up for another client c2, and
    so on, until a client with room is reached. Returns that client (None: there is none)."""
    came_from: dict[int, tuple[int, int | None]] = {}  # client -> (subtopology taking it, client it gives up)
    frontier: list[tuple[int, int | None]] = [(g, None)]  # (subtopology, client it gives up)
    while frontier:
        next_frontier: list[tuple[int, int | None]] = []
        for taker, gives_up in frontier:
            for c in sorted(eligible[taker] - dealt[taker]):
                if c in came_from:
                    continue
                came_from[c] = (taker, gives_up)
                if left[c] > 0:
                    left[c] -= 1
                    at: int | None = c
                    while at is not None:
                        group, freed = came_from[at]
                        dealt[group].add(at)
                        if freed is not None:
                            dealt[group].discard(freed)
                        at = freed
                    return c
                next_frontier += [(h, c) for h in sorted(dealt) if c in dealt[h]]
        frontier = next_frontier
    return None
