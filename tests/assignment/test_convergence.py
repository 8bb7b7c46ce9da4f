"""Convergence in the style of Kafka's TaskAssignorConvergenceTest: seeded random groups that gain,
lose and regain clients (a returning client brings its old claims and state), rebalanced until stable.
Every round is checked against the invariants; every failure names the seed (replay it with
`-k "seed_<n>"`) and carries the group's history of events and rounds."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from streams_rt.assignment import AssignmentConfigs, RebalanceProtocol
from streams_rt.protocol import TaskId

from .harness import Group

SEEDS = range(120)


Tags = Callable[[], dict[str, str]]


def _scenario(seed: int, lag_per_round: int) -> tuple[Group, random.Random, Tags]:
    """Every tenth seed is a larger group (up to 24 clients, 200 tasks); protocols alternate. Of the
    rack-tagged groups, those of odd seeds are tagged by zone and rack (the racks drawn apart, so the
    other draws stay as they were)."""
    rng = random.Random(seed)
    big = seed % 10 == 9
    tasks = [
        TaskId(s, p)
        for s in range(rng.randint(1, 5 if big else 4))
        for p in range(rng.randint(1, 40 if big else 12))
    ]
    configs = AssignmentConfigs(
        num_standby_replicas=rng.randint(0, 2),
        max_warmup_replicas=rng.randint(1, 3),
        rack_aware_assignment_tags=(("zone", "rack") if seed % 2 else ("zone",)) if rng.random() < 0.3 else (),
    )
    racks = random.Random(-1 - seed)

    def tags() -> dict[str, str]:
        zone = {"zone": rng.choice("abc")}
        return {**zone, "rack": racks.choice("xyz")} if "rack" in configs.rack_aware_assignment_tags else zone

    protocol = RebalanceProtocol.EAGER if seed % 4 == 3 else RebalanceProtocol.COOPERATIVE
    group = Group(tasks, configs, protocol, rng, lag_per_round)
    for _ in range(rng.randint(1, 24 if big else 6)):
        group.add_client(rng.randint(1, 3), tags())
    return group, rng, tags


def _rounds_until_stable(group: Group, limit: int, seed: int, what: str) -> int:
    """Stable: nothing waits for a revocation or a warm-up, and nobody made a stale claim (a returning
    client's stale claims are dropped by the round that ignores them, which changes the next input)."""
    for rounds in range(1, limit + 1):
        stale_claims = group.stale_claims()
        result = group.round()
        if not stale_claims and not result.followup_rebalance and result.probing_rebalance_at_ms is None:
            snapshot = result.clients
            again = group.round()  # stable means: nothing changes when nothing changes
            if again.clients != snapshot:
                raise group.failure(f"seed={seed}: {what}: not a fixpoint after {rounds} rounds")
            return rounds
    raise group.failure(f"seed={seed}: {what}: no convergence within {limit} rounds")


def _events(group: Group, rng: random.Random, tags: Tags, seed: int, limit_for: Callable[[int], int]) -> None:
    """limit_for(n): the rounds allowed when n tasks may need a warm-up before they can move."""
    warmups = group.configs.max_warmup_replicas
    _rounds_until_stable(group, limit_for(len(group.tasks)), seed, "initial")
    for step in range(6):
        roll = rng.random()
        limit = limit_for(len(group.tasks))
        if len(group.clients) > 1 and roll < 0.4:
            victim = rng.choice(sorted(group.clients))
            group.drop_client(victim)
            what = f"step {step}: dropped {victim}"
        elif group.dropped and roll < 0.7:
            pid = rng.choice(sorted(group.dropped))
            # Its stale claims are state of unknown freshness: a task planned back onto it needs a
            # warm-up first (a probing round and a revoke round per max.warmup.replicas tasks).
            stale = len(group.dropped[pid].active)
            limit = max(limit, 2 + 2 * math.ceil(stale / warmups))
            group.resurrect_client(pid)
            what = f"step {step}: resurrected {pid} with {stale} stale claims"
        else:
            pid = group.add_client(rng.randint(1, 3), tags())
            what = f"step {step}: added {pid}"
        _rounds_until_stable(group, limit, seed, what)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed_{s}")
def test_converges_within_two_rounds_when_lags_are_zero(seed: int) -> None:
    group, rng, tags = _scenario(seed, lag_per_round=0)
    _events(group, rng, tags, seed, lambda n_tasks: 2)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed_{s}")
def test_converges_within_the_probing_rounds_warmups_need(seed: int) -> None:
    """Changelogs grow 50,000 records a round, so a client without the state is never caught up and
    every move of an active needs a warm-up: at most max.warmup.replicas per probing round, each
    finished by a revoke round."""
    group, rng, tags = _scenario(seed, lag_per_round=50_000)
    warmups = group.configs.max_warmup_replicas
    _events(group, rng, tags, seed, lambda n_tasks: 2 + 2 * math.ceil(n_tasks / warmups))
