"""Integration: version probing (Kafka's test_version_probing_upgrade sequence, with the driver's
coordinator upgraded last), mixed metadata versions converging, and upgrade.from's two bounces."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from streams_rt.coordinator.protocol_policy import ProtocolPolicy
from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.coordinator.state_store import FileStateStore
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from streams_rt.coordinator.user_data import StreamsUserDataCodec
from streams_rt.protocol import LATEST_SUPPORTED_VERSION
from tests.coordinator.future_codec import FUTURE_VERSION, FutureCoordinatorCodec
from tests.coordinator.harness import (
    TASKS,
    TEST_SETTINGS,
    Host,
    HostFactory,
    assert_single_owners,
    ownership_overlaps,
    restart,
    settled,
    settled_now,
    wait_until,
)

# Sessions outlast a coordinator restart; rounds are still fast because hosts heartbeat every 200 ms.
HOST_ARGS = ("--session-ms", "4000", "--max-poll-ms", "8000")
DOWNGRADE = f"downgrade subscription version {FUTURE_VERSION} -> {LATEST_SUPPORTED_VERSION}"
UPGRADE = f"upgrade subscription version {LATEST_SUPPORTED_VERSION} -> {FUTURE_VERSION}"


def settled_at(coordinator: Coordinator, hosts: list[Host], version: int) -> dict[str, Any]:
    """Settled, with every host using subscription `version` (members that change version rejoin)."""

    def check() -> dict[str, Any] | None:
        d = settled_now(coordinator, hosts)
        return d if d and all(s["version"] == version for s in d["hosts"].values()) else None

    return wait_until(check, 60, f"hosts {[h.name for h in hosts]} to settle at version {version}")


def test_version_probing_rolling_upgrade_then_future_coordinator(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """(1) One host of the next release (v12) joins hosts and a coordinator at v11: version probing,
    everyone gets v11 and rejoins, the new host downgrades (and logs it once). (2) All hosts are
    bounced to the next release: still v11. (3) The driver restarts with a v12 coordinator: every
    member supports 12, so all upgrade ("end of rolling upgrade"). No task has two holders."""
    caplog.set_level(logging.INFO, logger="streams_rt.coordinator.streams_round")
    store = FileStateStore(tmp_path / "coordinator.json")
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                              StreamsRoundPlanner(TASKS), store=store, settings=TEST_SETTINGS)
    hosts = HostFactory(coordinator, tmp_path)
    try:
        live = [hosts.start(n, *HOST_ARGS) for n in ("a", "b", "c")]
        settled_at(coordinator, live, LATEST_SUPPORTED_VERSION)
        for name in ("a12", "b12", "c12"):
            caplog.clear()
            assert live.pop(0).stop() == 0
            future = hosts.start(name, "--future", *HOST_ARGS)
            live.append(future)
            d = settled_at(coordinator, live, LATEST_SUPPORTED_VERSION)
            assert "version probing" in caplog.text
            assert {s["assignment_version"] for s in d["hosts"].values()} == {LATEST_SUPPORTED_VERSION}
            assert future.stderr().count(DOWNGRADE) == 1
            assert d["hosts"][name]["active"], f"{name} got no tasks after downgrading"
            assert_single_owners(live)
        assert all(h.stderr().count(DOWNGRADE) == 1 and UPGRADE not in h.stderr() for h in live)

        marks = {h.name: len(h.events()) for h in live}
        coordinator = restart(coordinator, StreamsRoundPlanner(TASKS, codec=FutureCoordinatorCodec()), store)
        d = settled_at(coordinator, live, FUTURE_VERSION)
        assert {s["assignment_version"] for s in d["hosts"].values()} == {FUTURE_VERSION}
        for h in live:
            assert h.stderr().count(UPGRADE) == 1
            assert not [e for e in h.events()[marks[h.name]:] if e["event"] == "lost"]
        assert_single_owners(live)
        assert not ownership_overlaps(hosts.hosts)
    finally:
        hosts.cleanup()
        coordinator.close()


def test_mixed_versions_use_the_common_version_then_upgrade_when_the_old_host_leaves(
    coordinator: Coordinator, hosts: HostFactory
) -> None:
    old = hosts.start("old", "--latest-version", "10")
    new = [hosts.start(n) for n in ("a", "b")]
    stable = settled(coordinator, [old, *new])["hosts"]
    assert {s["version"] for s in stable.values()} == {10}, stable
    assert old.stop() == 0
    stable = settled(coordinator, new)["hosts"]
    assert {s["version"] for s in stable.values()} == {LATEST_SUPPORTED_VERSION}, stable
    assert "upgrade subscription version 10 -> 11" in new[0].stderr()
    assert not ownership_overlaps(hosts.hosts)


def held_nothing_when_assigned(h: Host) -> bool:
    """EAGER: a member revokes everything before each round, so it holds nothing when assigned."""
    held: set[str] = set()
    for e in h.events():
        if e["event"] == "assigned":
            if held:
                return False
            held |= set(e["tasks"])
        elif e["event"] in ("revoked", "lost"):
            held -= set(e["tasks"])
    return True


def test_upgrade_from_two_bounces_from_eager_v2_to_cooperative_latest(tmp_path: Path) -> None:
    """KIP-429's two bounces from a release that spoke version 2 and EAGER (upgrade.from=1.1). Old
    world: an old coordinator (latest 2) and old hosts. First bounce: the driver and then every host
    restart on the new code with upgrade.from set: the group stays EAGER at version 2. Second bounce:
    the driver and then every host restart without it: mixed rounds are cooperative, and once the
    last old host is gone the group runs COOPERATIVE at the latest version."""
    store = FileStateStore(tmp_path / "coordinator.json")
    old_release = StreamsRoundPlanner(TASKS, codec=StreamsUserDataCodec(2))
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                              old_release, store=store, settings=TEST_SETTINGS)
    hosts = HostFactory(coordinator, tmp_path)
    old_args = ("--latest-version", "2", "--protocol", "EAGER", *HOST_ARGS)
    try:
        live = [hosts.start(n, *old_args) for n in ("a", "b", "c")]
        settled(coordinator, live)

        coordinator = restart(coordinator, StreamsRoundPlanner(TASKS, policy=ProtocolPolicy("1.1")), store)
        for name in ("a1", "b1", "c1"):
            assert live.pop(0).stop() == 0
            live.append(hosts.start(name, "--upgrade-from", "1.1", *HOST_ARGS))
            d = settled(coordinator, live)
            assert d["protocol"] == "EAGER"
            assert {(s["assignment_version"], s["eager"]) for s in d["hosts"].values()} == {(2, True)}
            assert_single_owners(live)
        assert all(held_nothing_when_assigned(h) for h in hosts.hosts)

        coordinator = restart(coordinator, StreamsRoundPlanner(TASKS), store)
        for name in ("a2", "b2", "c2"):
            assert live.pop(0).stop() == 0
            live.append(hosts.start(name, *HOST_ARGS))
            d = settled(coordinator, live)
            assert d["protocol"] == "COOPERATIVE"  # mixed groups run the safe cooperative hand-off
            assert_single_owners(live)
        done = settled_at(coordinator, live, LATEST_SUPPORTED_VERSION)
        assert {(s["assignment_version"], s["eager"]) for s in done["hosts"].values()} == {
            (LATEST_SUPPORTED_VERSION, False)
        }

        marks = {h.name: len(h.events()) for h in live}
        live.append(hosts.start("d", *HOST_ARGS))
        final = settled(coordinator, live)
        for h in live[:3]:
            revoked = {t for e in h.events()[marks[h.name]:] if e["event"] == "revoked" for t in e["tasks"]}
            assert not revoked & set(final["hosts"][h.name]["active"]), f"{h.name} revoked tasks it kept"
        assert not ownership_overlaps(hosts.hosts)
    finally:
        hosts.cleanup()
        coordinator.close()
