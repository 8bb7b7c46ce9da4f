"""EAGER members revoke everything before each round but still report what they held (Kafka's
prevTasks / task offset sums), so the assignor stays sticky; only ownership claims are empty."""

from __future__ import annotations

from pathlib import Path

from streams_rt.coordinator.protocol_policy import ProtocolPolicy
from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from tests.coordinator.harness import (
    TASKS,
    TEST_SETTINGS,
    HostFactory,
    assert_single_owners,
    ownership_overlaps,
    settled,
)

HOST_ARGS = ("--upgrade-from", "2.3", "--session-ms", "4000", "--max-poll-ms", "8000")


def test_an_eager_group_stays_sticky_when_a_host_joins(tmp_path: Path) -> None:
    """Three EAGER hosts hold 4 tasks each; a fourth joins. Balanced stickiness keeps 3 of each
    host's 4 tasks where they were (9 of 12); the newcomer gets one from each."""
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                              StreamsRoundPlanner(TASKS, policy=ProtocolPolicy("2.3")),
                              settings=TEST_SETTINGS)
    hosts = HostFactory(coordinator, tmp_path)
    try:
        live = [hosts.start(n, *HOST_ARGS) for n in ("a", "b", "c")]
        before = settled(coordinator, live)
        assert before["protocol"] == "EAGER"
        live.append(hosts.start("d", *HOST_ARGS))
        after = settled(coordinator, live)
        assert after["protocol"] == "EAGER"
        kept = {
            n: set(before["hosts"][n]["active"]) & set(after["hosts"][n]["active"]) for n in ("a", "b", "c")
        }
        assert all(len(k) == 3 for k in kept.values()), (before["hosts"], after["hosts"])
        assert len(after["hosts"]["d"]["active"]) == 3
        assert all(e["event"] != "lost" for h in live for e in h.events())
        assert_single_owners(live)
        assert not ownership_overlaps(hosts.hosts)
    finally:
        hosts.cleanup()
        coordinator.close()
