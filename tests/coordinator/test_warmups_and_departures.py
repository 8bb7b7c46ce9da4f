"""Integration, hosts as processes: deferred imbalance resolution (scheduled.rebalance.max.delay.ms)
and KIP-441's probing rebalance promoting a caught-up warm-up. The hosts fake their local state by
reporting changelog offset sums in their subscriptions; the changelog end is 1000 for every task."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from streams_rt.assignment import AssignmentConfigs
from streams_rt.coordinator.server import monotonic_ms
from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from streams_rt.protocol import TaskId
from tests.coordinator.harness import (
    TASKS,
    TEST_SETTINGS,
    HostFactory,
    converged,
    ownership_overlaps,
    settled,
    settled_now,
    wait_until,
)

END = 1000
CONFIGS = AssignmentConfigs(acceptable_recovery_lag=10, probing_rebalance_interval_ms=60_000)


def planner(max_delay_ms: int = 0) -> StreamsRoundPlanner:
    return StreamsRoundPlanner(TASKS, configs=CONFIGS, changelog_end_offsets=lambda: {t: END for t in TASKS},
                               scheduled_rebalance_max_delay_ms=max_delay_ms)


def caught_up(tasks: Iterable[TaskId]) -> str:
    return ",".join(f"{t}={END}" for t in sorted(tasks))


class MovableClock:
    """The coordinator's monotonic clock, which the test can move forward (sessions are long)."""

    def __init__(self) -> None:
        self.skew_ms = 0

    def __call__(self) -> int:
        return monotonic_ms() + self.skew_ms


def test_departed_hosts_caught_up_tasks_move_at_once_and_the_rest_wait_for_it(tmp_path: Path) -> None:
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                              planner(max_delay_ms=600_000), settings=TEST_SETTINGS)
    hosts = HostFactory(coordinator, tmp_path)
    only_a = frozenset(TaskId(1, p) for p in (3, 4, 5))  # nobody else has state for these
    pid_a = str(uuid.uuid4())
    try:
        a = hosts.start("a", "--process-id", pid_a, "--state-sums", caught_up(TASKS))
        b = hosts.start("b", "--state-sums", caught_up(TASKS - only_a))
        before = settled(coordinator, [a, b])
        assert set(map(str, only_a)) <= set(before["hosts"]["a"]["active"])

        assert a.stop() == 0  # a dynamic member leaves the group on a clean shutdown
        waiting = TASKS - only_a

        def b_alone() -> dict[str, Any] | None:
            d = converged(coordinator, 1, waiting)
            s = b.last_stable()
            return d if d and s and s["generation"] == d["generation"] else None

        wait_until(b_alone, 60, "b to take a's caught-up tasks")
        b_stable = b.last_stable()
        assert b_stable is not None and set(b_stable["active"]) == set(map(str, waiting))  # a's others wait for it

        a2 = hosts.start("a2", "--process-id", pid_a, "--state-sums", caught_up(TASKS))  # a comes back
        after = settled(coordinator, [a2, b])
        assert set(map(str, only_a)) <= set(after["hosts"]["a2"]["active"])
        assert not b.events("lost") and not ownership_overlaps(hosts.hosts)
    finally:
        hosts.cleanup()
        coordinator.close()


def test_probing_rebalance_promotes_caught_up_warmups(tmp_path: Path) -> None:
    clock = MovableClock()
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                              planner(), clock=clock, settings=TEST_SETTINGS)
    hosts = HostFactory(coordinator, tmp_path)
    patient = ("--session-ms", "180000", "--max-poll-ms", "180000")  # the clock jumps a minute
    try:
        a = hosts.start("a", "--state-sums", caught_up(TASKS), *patient)
        settled(coordinator, [a])
        b = hosts.start("b", "--warmups-catch-up-to", str(END), *patient)  # no state yet
        first = settled(coordinator, [a, b])
        warmups = set(first["hosts"]["b"]["standby"])
        assert warmups and not first["hosts"]["b"]["active"], "actives may only move to a caught-up host"
        marks = {h.name: len(h.events()) for h in (a, b)}

        clock.skew_ms += CONFIGS.probing_rebalance_interval_ms + 1_000  # the probing rebalance is due
        after = wait_until(
            lambda: (d := settled_now(coordinator, [a, b])) and d["generation"] > first["generation"] and d,
            60, "the probing rebalance to promote b's warm-ups",
        )
        promoted = set(after["hosts"]["b"]["active"])
        assert warmups <= promoted  # b's warm-ups report caught up by the next round, so more may follow
        reported_caught_up: set[str] = set()
        for e in b.events():
            if e["event"] == "reported":
                reported_caught_up |= set(e["caught_up"])
            elif e["event"] == "assigned":
                assert set(e["tasks"]) <= reported_caught_up, "an active moved to b before b reported it caught up"
        revoked = {t for e in a.events()[marks["a"]:] if e["event"] == "revoked" for t in e["tasks"]}
        assert revoked == promoted  # a gave up exactly the promoted tasks, nothing else
        assert not a.events("lost") and not b.events("lost") and not ownership_overlaps(hosts.hosts)
    finally:
        hosts.cleanup()
        coordinator.close()
