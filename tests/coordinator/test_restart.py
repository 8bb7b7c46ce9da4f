"""Integration: the coordinator (driver) restarts; generations keep increasing, hosts rejoin and
no task ever has two owners."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.coordinator.state_store import FileStateStore, StateStore
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from tests.coordinator.harness import TASKS, TEST_SETTINGS, HostFactory, ownership_overlaps, restart, settled

# The hosts' session must outlast the coordinator's downtime (closing, reading the store, binding).
HOST_ARGS = ("--session-ms", "4000", "--max-poll-ms", "8000")


@pytest.fixture(params=["file", pytest.param("kafka", marks=pytest.mark.broker)])
def app_and_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, StateStore]]:
    app = f"app-{uuid.uuid4().hex[:8]}"
    if request.param == "file":
        yield app, FileStateStore(tmp_path / "coordinator.json")
        return
    from streams_rt.coordinator.kafka_state_store import KafkaStateStore

    kafka = KafkaStateStore(request.getfixturevalue("kafka_broker").bootstrap_servers, app)
    yield app, kafka
    kafka.close()


def test_coordinator_restart_keeps_members_and_their_tasks(tmp_path: Path,
                                                          app_and_store: tuple[str, StateStore]) -> None:
    """The restarted coordinator recognises the hosts that come back: they keep their tasks (no
    `lost`), the generation goes on increasing, and a host killed while the driver was down is
    dropped after its session timeout, its tasks moving to the others. No task ever has two holders."""
    app, store = app_and_store
    first = Coordinator(CoordinatorConfig(app, initial_rebalance_delay_ms=0),
                        StreamsRoundPlanner(TASKS), store=store, settings=TEST_SETTINGS)
    hosts = HostFactory(first, tmp_path)
    second = None
    try:
        group = [hosts.start(n, *HOST_ARGS) for n in ("a", "b", "c")]
        before = settled(first, group)
        saved = store.load()
        assert saved is not None and saved.group.generation == before["generation"]
        assert sorted(m.member_id for m in saved.group.members) == sorted(before["members"])
        assert sorted(t for m in saved.group.members for t in m.active) == sorted(map(str, TASKS))
        held = {n: set(s["active"]) for n, s in before["hosts"].items()}
        marks = {h.name: len(h.events()) for h in group}
        group[2].kill9()  # c dies as the driver goes down: nobody can tell before its session expires
        second = restart(first, StreamsRoundPlanner(TASKS), store)
        after = settled(second, group[:2])
        assert after["generation"] > before["generation"]
        assert set(after["members"]) < set(before["members"]), "a and b should rejoin under their old member ids"
        saved = store.load()
        assert saved is not None and saved.group.generation == after["generation"]
        for h in group[:2]:
            new_events = h.events()[marks[h.name]:]
            assert not [e for e in new_events if e["event"] == "lost"], f"{h.name} lost its tasks"
            assert not [e for e in new_events if e["event"] == "revoked"], f"{h.name} revoked tasks"
            assert held[h.name] <= set(after["hosts"][h.name]["active"])
        assert ownership_overlaps(hosts.hosts) == []
    finally:
        hosts.cleanup()
        if second is not None:
            second.close()
        else:
            first.close()
