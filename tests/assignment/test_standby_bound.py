"""The quality bench's lower bound on the standby spread (bench/standby_bound.py): never above the best
placement an exhaustive search finds, and at it where the tags force the spread."""

from __future__ import annotations

import itertools
import random

import pytest

from bench.standby_bound import Member, standby_spread_bound


def _deficit(placement: tuple[tuple[int, ...], ...], tags: list[tuple[str, ...]], replicas: int) -> int:
    keys = len(tags[0])
    values = [len({t[k] for t in tags}) for k in range(keys)]
    return sum(min(replicas, values[k]) - len({tags[c][k] for c in task}) for task in placement for k in range(keys))


def _best_by_deficit(caps: list[int], tags: list[tuple[str, ...]], tasks: int, replicas: int) -> dict[int, float]:
    """Exhaustively: the least standby spread per tag deficit (at most), actives within the floor and the
    ceil of each capacity share."""
    n, total = len(caps), sum(caps)
    best: dict[int, float] = {}
    for placement in itertools.product(list(itertools.permutations(range(n), replicas)), repeat=tasks):
        actives = [sum(task[0] == c for task in placement) for c in range(n)]
        if any(not tasks * cap // total <= a <= -(-tasks * cap // total) for a, cap in zip(actives, caps, strict=True)):
            continue
        standbys = [sum(c in task[1:] for task in placement) / caps[c] for c in range(n)]
        d = _deficit(placement, tags, replicas)
        best[d] = min(best.get(d, float("inf")), max(standbys) - min(standbys))
    return {d: min(v for e, v in best.items() if e <= d) for d in best}


@pytest.mark.parametrize("seed", range(12))
def test_the_bound_is_never_above_the_best_placement(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(3, 4)
    caps = [rng.randint(1, 2) for _ in range(n)]
    keys = rng.randint(1, 2)
    tags = [tuple(rng.choice("ab" if k == 0 else "xyz") for k in range(keys)) for _ in range(n)]
    tasks, replicas = 3, rng.randint(2, 3)
    for deficit, spread in _best_by_deficit(caps, tags, tasks, replicas).items():
        members = [Member(cap, tag, tasks * cap // sum(caps)) for cap, tag in zip(caps, tags, strict=True)]
        assert standby_spread_bound(members, tasks, replicas, deficit) <= spread + 1e-9, (caps, tags, deficit)


def test_a_zone_of_one_client_holding_every_task_sets_the_bound() -> None:
    """Zones a and b, racks x and y, three replicas: every task covers both zones and both racks, so the
    one client in zone b and the one on rack x hold a replica of every task (100 each); only actives
    there (at most the ceil of their share) spare them a standby."""
    where = [(3, ("a", "x"), 38), (2, ("a", "y"), 25), (2, ("a", "y"), 25), (1, ("b", "y"), 12)]
    members = [Member(*m) for m in where]
    # b: at most 13 actives (ceil of 12.5), so 87 standbys; the (a, y) pair share 100 - 13 - 37 = 50 replicas.
    assert standby_spread_bound(members, 100, 3, 0) == pytest.approx(87 - 12.5)
    # A deficit allowing anything leaves the capacities alone to bound it.
    untagged = [Member(cap, (), a) for cap, _, a in where]
    assert standby_spread_bound(members, 100, 3, 1000) == standby_spread_bound(untagged, 100, 3, 0) < 10


def test_the_actives_add_up_to_the_tasks_across_clients() -> None:
    """Random seed 96 of the quality bench, its second stable point: zone and rack tags, 23 tasks with
    three replicas. Only (b, x) is on rack x and only (a, y) and (c, y) are in zones a and c, so a task
    active in zone b on rack y misses one value whatever its standbys (8 such tasks: deficit 8), and
    every other task needs (a, y), (c, y) and (b, x). Together (c, y) and (b, x) then hold two standbys
    of each task (a, y) runs (at least its floor, 6), one of each task the other runs, and one or two
    of each zone-b rack-y task ((a, y) holds one of each at most): 6 + 15 + 8 = 29, so one of them
    holds 15 (7.5 per thread). The flow sees only each client's replicas and found 7 per thread, with
    counts that needed more actives than there are tasks."""
    where = [(1, ("b", "y"), 2), (1, ("b", "y"), 2), (3, ("a", "y"), 7), (2, ("c", "y"), 4), (2, ("b", "y"), 4),
             (2, ("b", "x"), 4)]
    assert standby_spread_bound([Member(*m) for m in where], 23, 3, 8) == 7.5
