"""Integration: every host is a separate OS process with its own Flight connection."""

from __future__ import annotations

import uuid

from streams_rt.coordinator.service import Coordinator
from streams_rt.rpc.client import GroupClient
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    SyncRequest,
    SyncResponse,
)
from streams_rt.tasks.streams_codec import StreamsMemberCodec
from tests.coordinator.harness import (
    HostFactory,
    assert_single_owners,
    converged,
    hosts_at,
    ownership_overlaps,
    settled,
    wait_until,
)

CONVERGE_S = 60


def test_fourth_host_joins_and_only_moved_tasks_are_revoked(coordinator: Coordinator, hosts: HostFactory) -> None:
    group = [hosts.start(n) for n in ("a", "b", "c")]
    before = wait_until(lambda: converged(coordinator, 3), CONVERGE_S, "3 hosts to converge")
    owned_before = {n: set(s["active"]) for n, s in hosts_at(group, before["generation"]).items()}
    assert_single_owners(group)
    marks = {h.name: len(h.events()) for h in group}

    d = hosts.start("d")
    after = wait_until(lambda: converged(coordinator, 4), CONVERGE_S, "4 hosts to converge")
    hosts_at([*group, d], after["generation"])
    assert after["generation"] > before["generation"]
    assert_single_owners([*group, d])
    for h in group:
        new_events = h.events()[marks[h.name]:]
        revoked = {t for e in new_events if e["event"] == "revoked" for t in e["tasks"]}
        stable = h.last_stable()
        assert stable is not None
        kept = set(stable["active"])
        assert not revoked & kept, f"{h.name} revoked tasks it kept: {sorted(revoked & kept)}"
        assert revoked <= owned_before[h.name]
        assert not [e for e in new_events if e["event"] == "lost"]
        # KIP-429: assigned is called every round, even when empty.
        assert [e for e in new_events if e["event"] == "assigned"]
    d_stable = d.last_stable()
    assert d_stable is not None and d_stable["active"], "the new host got no tasks"
    assert all(e["event"] != "revoked" for e in d.events())
    assert not ownership_overlaps(hosts.hosts)


def test_kill9_host_tasks_move_after_session_timeout(coordinator: Coordinator, hosts: HostFactory) -> None:
    group = [hosts.start(n) for n in ("a", "b", "c")]
    before = wait_until(lambda: converged(coordinator, 3), CONVERGE_S, "3 hosts to converge")
    victim = group[1]
    victim_tasks = set(hosts_at(group, before["generation"])["b"]["active"])
    victim.kill9()
    after = wait_until(lambda: converged(coordinator, 2), CONVERGE_S, "survivors to take over")
    now_held = {t for m in after["members"].values() for t in m["active"]}
    assert victim_tasks <= now_held
    assert_single_owners(group)
    for h in (group[0], group[2]):
        assert not h.events("lost")
    assert not ownership_overlaps(hosts.hosts)


def test_static_member_restart_within_session_timeout_does_not_rebalance(
    coordinator: Coordinator, hosts: HostFactory
) -> None:
    pids = {n: str(uuid.uuid4()) for n in ("a", "b", "c")}

    def args(n: str) -> tuple[str, ...]:
        return ("--instance-id", n, "--process-id", pids[n], "--session-ms", "8000")

    group = [hosts.start(n, *args(n)) for n in ("a", "b", "c")]
    before = wait_until(lambda: converged(coordinator, 3), CONVERGE_S, "3 static hosts to converge")
    b_tasks = hosts_at(group, before["generation"])["b"]["active"]
    group[1].kill9()
    b2 = hosts.start("b", *args("b"))
    stable = wait_until(b2.last_stable, 30, "restarted b to get its assignment")
    assert stable["generation"] == before["generation"] and stable["active"] == b_tasks
    d = coordinator.describe()
    assert d["generation"] == before["generation"] and d["state"] == "STABLE"
    assert sorted(m["instance_id"] for m in d["members"].values()) == ["a", "b", "c"]
    assert not ownership_overlaps(hosts.hosts)


def test_bad_user_data_gets_that_host_an_error_and_others_keep_working(
    coordinator: Coordinator, hosts: HostFactory
) -> None:
    group = [hosts.start(n) for n in ("a", "b")]
    before = wait_until(lambda: converged(coordinator, 2), CONVERGE_S, "2 hosts to converge")
    bad = hosts.start("bad", "--bad-user-data")
    assert bad.proc.wait(60) == 2
    (failed,) = bad.events("failed")
    assert failed["error"] == GroupError.ASSIGNOR_ERROR.value and failed["assignor_error"] == 3
    assert "malformed subscription user data" in failed["message"] and "at byte" in failed["message"]
    d = coordinator.describe()
    assert d["generation"] == before["generation"] and d["state"] == "STABLE" and len(d["members"]) == 2
    assert all(h.proc.poll() is None for h in group)
    assert not ownership_overlaps(hosts.hosts)


def test_stale_generation_is_refused(coordinator: Coordinator, hosts: HostFactory) -> None:
    """A call carrying an old generation (a zombie's view, sent here by a raw client) is refused."""
    client = GroupClient(coordinator.address, secret=coordinator.secret)
    try:
        user_data = StreamsMemberCodec(uuid.uuid4()).encode_subscription(11, frozenset(), frozenset())
        j = client.call(JoinRequest("app", "", "COOPERATIVE", user_data, 30_000, 30_000), JoinResponse)
        s = client.call(SyncRequest("app", j.member_id, -1, wait_ms=5000), SyncResponse)
        assert s.ready
        old = s.generation
        hosts.start("a")
        # A real host joins: the raw member rejoins the round, so the group moves to a newer generation.
        wait_until(lambda: coordinator.describe()["state"] == "PREPARING_REBALANCE", 30, "a rebalance to start")
        client.call(JoinRequest("app", j.member_id, "COOPERATIVE", user_data, 30_000, 30_000), JoinResponse)
        wait_until(lambda: coordinator.generation > old, 30, "a new generation")
        hb = client.call(HeartbeatRequest("app", j.member_id, old), HeartbeatResponse)
        assert hb.error == GroupError.ILLEGAL_GENERATION.value and GroupError(hb.error).retriable
    finally:
        client.close()
    assert not ownership_overlaps(hosts.hosts)


def test_slow_revocation_longer_than_the_session_keeps_membership(coordinator: Coordinator, hosts: HostFactory) -> None:
    """The heartbeat thread keeps the session alive while a revoke callback runs (2.5 s > 1.5 s)."""
    slow = ("--revoke-delay-ms", "2500", "--max-poll-ms", "8000")
    a = hosts.start("a", *slow)
    settled(coordinator, [a])
    b = hosts.start("b", *slow)
    after = settled(coordinator, [a, b])
    assert a.events("revoked") and not a.events("lost") and not b.events("lost")
    assert all(s["active"] for s in after["hosts"].values())
    assert not ownership_overlaps(hosts.hosts)


def test_member_that_misses_the_rebalance_timeout_is_removed(coordinator: Coordinator, hosts: HostFactory) -> None:
    """a's revoke callback (4 s) outlasts max.poll.interval.ms (2 s): the follow-up round goes on
    without it, the round counts as failed, and a, fenced, reports its tasks lost and rejoins."""
    a = hosts.start("a", "--revoke-delay-ms", "4000", "--max-poll-ms", "2000")
    settled(coordinator, [a])
    b = hosts.start("b")
    wait_until(lambda: coordinator.describe()["metrics"]["failed-rebalance-total"] >= 1, 30, "a failed round")
    wait_until(lambda: a.events("lost"), 30, "a to report its tasks lost")
    after = settled(coordinator, [a, b])
    assert all(s["active"] for s in after["hosts"].values())
