"""Saving the group's record off the group lock: a blocked or failing store delays only the new
generation's delivery, never heartbeats or other calls; failures back off and log once."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from streams_rt.coordinator.group import Group, Member, MemberAssignment, RoundOutcome
from streams_rt.coordinator.group_record import GroupRecord
from streams_rt.coordinator.saver import RecordSaver
from streams_rt.coordinator.server import monotonic_ms
from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.coordinator.state_store import CoordinatorSnapshot, FileStateStore
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from streams_rt.protocol import RebalanceProtocol
from tests.coordinator.harness import TASKS, TEST_SETTINGS, HostFactory, assert_single_owners, settled, wait_until

COOPERATIVE = RebalanceProtocol.COOPERATIVE
HOST_ARGS = ("--session-ms", "1500", "--max-poll-ms", "8000")


class GatedStore:
    """A test double of the StateStore interface: a real file store behind a gate that can block."""

    def __init__(self, path: Path) -> None:
        self.inner = FileStateStore(path)
        self.open = threading.Event()
        self.open.set()
        self.waiting = threading.Event()  # a save is blocked at the gate

    def load(self) -> CoordinatorSnapshot | None:
        return self.inner.load()

    def save(self, snapshot: CoordinatorSnapshot) -> None:
        if not self.open.is_set():
            self.waiting.set()
            self.open.wait(60)  # bounded, so a broken coordinator still shuts down
        self.inner.save(snapshot)


def last_seen(coordinator: Coordinator) -> dict[str, int]:
    """When each member was last heard from; fails if a hanging save holds the group lock."""
    lock = coordinator._server.lock
    if not lock.acquire(timeout=20):
        raise AssertionError("the group lock is held while the store hangs")
    try:
        return {mid: m.last_seen_ms for mid, m in coordinator.group.members.items()}
    finally:
        lock.release()


def all_seen_after(coordinator: Coordinator, since_ms: int, members: int) -> bool:
    seen = last_seen(coordinator)
    return len(seen) == members and all(t > since_ms for t in seen.values())


def test_a_blocked_store_stalls_only_the_new_generations_delivery(tmp_path: Path) -> None:
    store = GatedStore(tmp_path / "coordinator.json")
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                              StreamsRoundPlanner(TASKS), store=store, settings=TEST_SETTINGS)
    hosts = HostFactory(coordinator, tmp_path)
    try:
        static = ("--instance-id", "s", "--process-id", str(uuid.uuid4()), *HOST_ARGS)  # a restart keeps both
        live = [hosts.start("a", *HOST_ARGS), hosts.start("b", *HOST_ARGS), hosts.start("s", *static)]
        before = settled(coordinator, live)
        generation = before["generation"]

        # A static member restarts: a membership-only save, and it blocks.
        store.open.clear()
        live[2].kill9()
        live[2] = hosts.start("s2", *static)
        wait_until(store.waiting.is_set, 30, "the membership save to block")
        since = monotonic_ms()
        # Heartbeats of a and b (and the new s's sync) are answered while the save hangs; s gets
        # its old assignment back at the same generation.
        wait_until(lambda: all_seen_after(coordinator, since, 3), 30, "every member to be heard from")
        wait_until(lambda: (live[2].last_stable() or {}).get("generation") == generation, 30, "s2 to be stable")

        # A round forms while the store still hangs: nobody may fetch it, everyone keeps its session.
        live.append(hosts.start("c", *HOST_ARGS))
        wait_until(lambda: coordinator.describe()["saving"], 30, "the next generation to wait for its save")
        since = monotonic_ms()
        wait_until(lambda: all_seen_after(coordinator, since, 4), 30, "every member to be heard from")
        assert all((h.last_stable() or {}).get("generation", -1) <= generation for h in live)

        store.open.set()
        after = settled(coordinator, live)
        assert after["generation"] > generation and not after["saving"]  # a follow-up round hands tasks to c
        saved = store.load()
        assert saved is not None and saved.group.generation == after["generation"]
        assert not [e for h in live[:2] for e in h.events() if e["event"] == "lost"]
        assert_single_owners(live)
    finally:
        store.open.set()
        hosts.cleanup()
        coordinator.close()


class FlakyStore:
    def __init__(self) -> None:
        self.failing = True
        self.attempts = 0
        self.saved: list[GroupRecord] = []

    def save(self, record: GroupRecord) -> None:
        self.attempts += 1
        if self.failing:
            raise RuntimeError("broker down")
        self.saved.append(record)


def test_failed_saves_back_off_and_log_once_per_change_of_state(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streams_rt.coordinator.saver")
    group = Group("app", lambda members, generation, now_ms, check=None: _one_round(members, generation),
                  persistent=True)
    lock = threading.Condition()
    store, pauses = FlakyStore(), []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        threading.Event().wait(0.001)

    saver = RecordSaver(group, lock, store.save, first_backoff_s=0.05, max_backoff_s=0.4, pause=pause)
    try:
        with lock:
            member = group.join(member_id="", instance_id=None, protocol=COOPERATIVE, subscription=None,
                                session_timeout_ms=1000, rebalance_timeout_ms=1000, now_ms=0)
        saver.notify()
        wait_until(lambda: store.attempts >= 8, 30, "eight failed attempts")
        with lock:
            assert group.saving
            assert group.sync(member_id=member, instance_id=None, known_generation=-1, now_ms=1) is None
        assert pauses[:5] == [0.05, 0.1, 0.2, 0.4, 0.4]
        assert caplog.text.count("could not save generation 1") == 1
        store.failing = False
        wait_until(lambda: not group.saving, 30, "the save to succeed")
        with lock:
            got = group.sync(member_id=member, instance_id=None, known_generation=-1, now_ms=2)
        assert got is not None and got.generation == 1 and store.saved[-1].generation == 1
        assert caplog.text.count("saving works again") == 1
    finally:
        saver.close()


def _one_round(members: Mapping[str, Member], generation: int) -> RoundOutcome:
    return RoundOutcome({mid: MemberAssignment(generation, COOPERATIVE, b"") for mid in members}, COOPERATIVE)
