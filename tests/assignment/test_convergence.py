"""Convergence in the style of Kafka's TaskAssignorConvergenceTest: seeded random groups that gain and
lose clients, rebalanced until stable. Every round is checked against the invariants; the seed is in
every failure message so a failing scenario can be replayed with `-k "seed_<n>"`."""

from __future__ import annotations

import math
from collections.abc import Callable
import random

import pytest

from streams_rt.assignment import AssignmentConfigs, RebalanceProtocol
from streams_rt.protocol import TaskId

from .harness import Group

SEEDS = range(120)


def _scenario(seed: int, lag_per_round: int) -> tuple[Group, random.Random]:
    """Every tenth seed is a larger group (up to 24 clients, 200 tasks); protocols alternate."""
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
        rack_aware_assignment_tags=("zone",) if rng.random() < 0.3 else (),
    )
    protocol = RebalanceProtocol.EAGER if seed % 4 == 3 else RebalanceProtocol.COOPERATIVE
    group = Group(tasks, configs, protocol, rng, lag_per_round)
    for _ in range(rng.randint(1, 24 if big else 6)):
        group.add_client(rng.randint(1, 3), {"zone": rng.choice("abc")})
    return group, rng


def _rounds_until_stable(group: Group, limit: int, seed: int, what: str) -> int:
    for rounds in range(1, limit + 1):
        result = group.round()
        if not result.followup_rebalance and result.probing_rebalance_at_ms is None:
            snapshot = result.clients
            again = group.round()  # stable means: nothing changes when nothing changes
            assert again.clients == snapshot, f"seed={seed}: {what}: not a fixpoint after {rounds} rounds"
            return rounds
    raise AssertionError(f"seed={seed}: {what}: no convergence within {limit} rounds")


def _events(group: Group, rng: random.Random, seed: int, limit_for: Callable[[int], int]) -> None:
    _rounds_until_stable(group, limit_for(len(group.tasks)), seed, "initial")
    for step in range(6):
        if len(group.clients) > 1 and rng.random() < 0.4:
            victim = rng.choice(sorted(group.clients))
            group.drop_client(victim)
            what = f"step {step}: dropped {victim}"
        else:
            pid = group.add_client(rng.randint(1, 3), {"zone": rng.choice("abc")})
            what = f"step {step}: added {pid}"
        _rounds_until_stable(group, limit_for(len(group.tasks)), seed, what)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed_{s}")
def test_converges_within_two_rounds_when_lags_are_zero(seed: int) -> None:
    group, rng = _scenario(seed, lag_per_round=0)
    _events(group, rng, seed, lambda n_tasks: 2)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed_{s}")
def test_converges_within_the_probing_rounds_warmups_need(seed: int) -> None:
    """Changelogs grow 50,000 records a round, so a client without the state is never caught up and
    every move of an active needs a warm-up: at most max.warmup.replicas per probing round, each
    finished by a revoke round."""
    group, rng = _scenario(seed, lag_per_round=50_000)
    warmups = group.configs.max_warmup_replicas
    _events(group, rng, seed, lambda n_tasks: 2 * math.ceil(n_tasks / warmups) + 2)
