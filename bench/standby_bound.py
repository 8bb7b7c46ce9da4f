"""A lower bound on the standby spread (max - min standbys per capacity unit) that any placement with
a given tag deficit can reach: what the quality bench holds our standby spread against where Kafka's
assignor buys a lower spread with a worse tag deficit (issue 21, point 4).

The bound is exact for relaxations, so it never exceeds the true best. A placement puts each of T
stateful tasks on R distinct clients (its active and R - 1 standbys), client c running a_c actives and
s_c standbys, r_c = a_c + s_c replicas, at most one per task: r_c <= T. The actives stay as balanced
as both assignors keep them: a_c within the floor and the ceil of c's capacity share of T (or at the
count given, where that lies outside). Per tag key with V values, a task covering every value it could
(min(R, V)) puts at most one replica on each value when R <= V, and at least one on each when R > V.
Summed over the tasks, a value's replicas n_v past T (R <= V) are replicas doubling up on a value
and count toward the deficit, as do those short of T (R > V: a task missing the value), so the
deficit is at least the sum of those excesses. With one or two keys the values form two partitions
of the clients, so the least such sum over counts r_c within given bounds is a min-cost flow (source
-> first key's values -> clients -> second key's values -> sink, a unit past or short of T costing
1). The flow sees only r_c, not that the actives add up to T across clients: two more flows, with
that sum relaxed into costs (_Counts), must keep the deficit too. The bound is the narrowest window
of standbys per capacity unit whose counts keep that sum within the deficit, found by two pointers
over the levels s / capacity. More than two keys: the first two (dropping constraints keeps it a
bound)."""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Member:
    capacity: int
    tags: tuple[str | None, ...]  # its value of each tag key, in key order
    stateful_actives: int  # the count given (ours), admitted even outside the capacity share


def standby_spread_bound(members: Sequence[Member], tasks: int, replicas: int, deficit: int) -> float:
    """The lowest standby spread over placements of `tasks` stateful tasks with `replicas` replicas each
    (active included) whose tag deficit is at most `deficit` (see the module docstring)."""
    n_standbys = tasks * (replicas - 1)
    if n_standbys <= 0 or len(members) < 2:
        return 0.0
    total_cap = sum(m.capacity for m in members)
    low_a = [min(m.stateful_actives, tasks * m.capacity // total_cap) for m in members]
    high_a = [max(m.stateful_actives, -(-tasks * m.capacity // total_cap)) for m in members]
    groups = _value_groups(members, replicas)
    average = Fraction(n_standbys, total_cap)
    levels = sorted({Fraction(s, m.capacity) for m in members for s in range(tasks + 1)})
    los = [v for v in levels if v <= average]
    his = [v for v in levels if v >= average]
    best: Fraction | None = None
    j = 0
    for lo in los:  # the narrowest feasible hi never goes down as lo goes up: two pointers
        while j < len(his) and not _feasible(members, tasks, replicas, deficit, low_a, high_a, groups, lo, his[j]):
            j += 1
        if j == len(his):
            break
        if best is None or his[j] - lo < best:
            best = his[j] - lo
    return float(best) if best is not None else 0.0  # none found (our own placement is one): no bound


Groups = list[list[tuple[list[int], bool]]]  # per key (at most two): each value's members, and whether
# a task puts at most one replica there (True: R <= V) or at least one (False)


def _value_groups(members: Sequence[Member], replicas: int) -> Groups:
    keys = len(members[0].tags)
    out: Groups = []
    for k in range(min(keys, 2)):
        by_value: dict[str | None, list[int]] = defaultdict(list)
        for i, m in enumerate(members):
            by_value[m.tags[k]].append(i)
        out.append([(c, replicas <= len(by_value)) for c in by_value.values()])
    return out


def _feasible(
    members: Sequence[Member], tasks: int, replicas: int, deficit: int, low_a: list[int], high_a: list[int],
    groups: Groups, lo: Fraction, hi: Fraction,
) -> bool:
    """Whether replica counts exist with every client's standbys per capacity unit within [lo, hi]."""
    n_standbys = tasks * (replicas - 1)
    s_lo, s_hi = [], []
    for m, al in zip(members, low_a, strict=True):
        s_lo.append(math.ceil(lo * m.capacity))
        s_hi.append(min(math.floor(hi * m.capacity), tasks - al))
        if s_lo[-1] > s_hi[-1]:
            return False
    bounds = _Counts(tasks, low_a, high_a, s_lo, s_hi)
    total = tasks * replicas
    if not (sum(s_lo) <= n_standbys <= sum(s_hi) and sum(bounds.low_r) <= total <= sum(bounds.high_r)):
        return False
    if not groups:
        return True
    return all(
        _least_deficit(len(members), bounds, weights, groups, tasks, total, deficit) <= deficit
        for weights in ((0, 0), (0, 1), (1, 0))
    )


@dataclass(frozen=True)
class _Counts:
    """Each client's bounds on its actives (a) and standbys (s), so on its replicas r = a + s.

    The flow sees only r, so it could pair a high r here with a high r there that together need more
    actives than there are tasks (random seed 96 of the quality bench: 7 per thread where 7.5 is the
    best). Lagrangian relaxation of the actives' sum: r above low_a + s_hi needs that many actives
    above low_a, r below high_a + s_lo that many below high_a, and the actives add up to the tasks, so
    the first total at most tasks - sum(low_a), the second at most sum(high_a) - tasks. Charging 1 per
    unit of either (weights: short, extra) and crediting its most only lowers the cost of any real
    placement, so each weighting, as the plain flow, must stay within the deficit: the bound stays a
    bound."""

    tasks: int
    low_a: list[int]
    high_a: list[int]
    s_lo: list[int]
    s_hi: list[int]

    @property
    def low_r(self) -> list[int]:
        return [a + s for a, s in zip(self.low_a, self.s_lo, strict=True)]

    @property
    def high_r(self) -> list[int]:
        return [min(self.tasks, a + s) for a, s in zip(self.high_a, self.s_hi, strict=True)]

    def credit(self, weights: tuple[int, int]) -> int:
        """What the charges may reach in a real placement, deducted from the cost."""
        short, extra = weights
        return short * (sum(self.high_a) - self.tasks) + extra * (self.tasks - sum(self.low_a))

    def segments(self, c: int, weights: tuple[int, int]) -> tuple[int, list[tuple[int, int]]]:
        """Client c's charge at r = low_r, and the units from low_r to high_r as (count, cost per
        unit): -short while below high_a + s_lo, +extra from low_a + s_hi on."""
        short, extra = weights
        low, high = self.low_r[c], self.high_r[c]
        short_until, extra_from = self.high_a[c] + self.s_lo[c], self.low_a[c] + self.s_hi[c]
        cuts = sorted({low, high, *(x for x in (short_until, extra_from) if low < x < high)})
        return short * max(0, short_until - low), [
            (v - u, -short * (u < short_until) + extra * (u >= extra_from))
            for u, v in zip(cuts, cuts[1:], strict=False)
        ]


def _least_deficit(
    n: int, bounds: _Counts, weights: tuple[int, int], groups: Groups, tasks: int, total: int, budget: int
) -> float:
    """The least deficit the value bounds imply over replica counts within `bounds` adding up to
    `total`, plus the Lagrangian charges of _Counts (infinite: none, or more than `budget`): a min-cost
    circulation, source -> first key's values -> clients -> second key's values (or straight) -> sink ->
    source, where a value's replicas cost 1 each past `tasks` (at most one per task) or short of it (at
    least one per task)."""
    first = groups[0]
    second = groups[1] if len(groups) > 1 else []
    source, sink, v1 = 0, 1, 2
    cl = v1 + len(first)
    v2 = cl + n
    flow = _Flow(v2 + len(second) + 2)
    constant = -bounds.credit(weights)

    def value_edge(u: int, v: int, at_most_one: bool) -> None:
        nonlocal constant
        if at_most_one:
            flow.add(u, v, 0, tasks, 0)
            flow.add(u, v, 0, total, 1)
        else:  # each replica up to `tasks` saves one of the `tasks` counted short
            constant += tasks
            flow.add(u, v, 0, tasks, -1)
            flow.add(u, v, 0, total, 0)

    for g, (clients, at_most_one) in enumerate(first):
        value_edge(source, v1 + g, at_most_one)
        for c in clients:
            charge, units = bounds.segments(c, weights)
            constant += charge
            flow.add(v1 + g, cl + c, bounds.low_r[c], bounds.low_r[c], 0)
            for count, cost in units:
                flow.add(v1 + g, cl + c, 0, count, cost)
    for g, (clients, at_most_one) in enumerate(second):
        for c in clients:
            flow.add(cl + c, v2 + g, 0, total, 0)
        value_edge(v2 + g, sink, at_most_one)
    if not second:
        for c in range(n):
            flow.add(cl + c, sink, 0, total, 0)
    flow.add(sink, source, total, total, 0)
    return constant + flow.min_cost_circulation(budget - constant)


class _Flow:
    """A min-cost circulation on a small graph: lower bounds and negative costs are turned into
    supplies and demands (negative-cost edges start saturated), which successive shortest paths
    (Bellman-Ford) then meet."""

    def __init__(self, n: int) -> None:
        self.adj: list[list[int]] = [[] for _ in range(n + 2)]
        self.to: list[int] = []
        self.cap: list[int] = []
        self.cost: list[int] = []
        self.excess = [0] * (n + 2)
        self.base = 0  # the cost of the flow forced so far

    def _arc(self, u: int, v: int, cap: int, cost: int) -> None:
        for a, b, c, k in ((u, v, cap, cost), (v, u, 0, -cost)):
            self.adj[a].append(len(self.to))
            self.to.append(b)
            self.cap.append(c)
            self.cost.append(k)

    def add(self, u: int, v: int, lo: int, hi: int, cost: int) -> None:
        forced = hi if cost < 0 else lo
        self.excess[v] += forced
        self.excess[u] -= forced
        self.base += forced * cost
        self._arc(u, v, hi - forced, cost)
        if cost < 0:
            self.cap[-1] = hi - lo  # the saturated part can be sent back, down to the lower bound

    def min_cost_circulation(self, budget: int) -> float:
        """The least cost, infinite when there is no circulation or it costs more than `budget`."""
        ss, tt = len(self.adj) - 2, len(self.adj) - 1
        need = 0
        for v, e in enumerate(self.excess[:ss]):
            if e > 0:
                self._arc(ss, v, e, 0)
                need += e
            elif e < 0:
                self._arc(v, tt, -e, 0)
        cost = self.base
        while need:
            dist: list[float] = [math.inf] * len(self.adj)
            via = [-1] * len(self.adj)
            dist[ss] = 0
            queue, queued = deque([ss]), {ss}
            while queue:
                u = queue.popleft()
                queued.discard(u)
                for e in self.adj[u]:
                    v = self.to[e]
                    if self.cap[e] > 0 and dist[u] + self.cost[e] < dist[v]:
                        dist[v] = dist[u] + self.cost[e]
                        via[v] = e
                        if v not in queued:
                            queue.append(v)
                            queued.add(v)
            if dist[tt] == math.inf:
                return math.inf
            push, v = need, tt
            while v != ss:
                e = via[v]
                push = min(push, self.cap[e])
                v = self.to[e ^ 1]
            v = tt
            while v != ss:
                e = via[v]
                self.cap[e] -= push
                self.cap[e ^ 1] += push
                v = self.to[e ^ 1]
            need -= push
            cost += push * int(dist[tt])
            if cost > budget and dist[tt] >= 0:  # paths only get dearer from here
                return math.inf
        return cost
