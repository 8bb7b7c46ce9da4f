"""The member's KIP-429 rules, driven through the pure state machine: events in, actions out."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.config import resolve
from streams_rt.coordinator.user_data import AssignmentContent, RoundContent, StreamsUserDataCodec
from streams_rt.protocol import AssignorError, RebalanceProtocol, TaskId
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import HeartbeatResponse, JoinResponse, SyncResponse
from streams_rt.tasks.membership import (
    TRANSITIONS,
    Action,
    AssignmentErrorReceived,
    Backoff,
    CallbackKind,
    CloseRequested,
    CompleteReconciliation,
    CoordinatorUnreachable,
    Crashed,
    Event,
    GroupRefused,
    HeartbeatAnswered,
    HeartbeatFailed,
    JoinAnswered,
    MemberConfig,
    MemberCrashed,
    Membership,
    MemberState,
    ReconciliationCompleted,
    RunCallback,
    SendJoin,
    SendLeave,
    SendSync,
    SyncAnswered,
    UnreadableAssignment,
)
from streams_rt.tasks.streams_codec import StreamsMemberCodec

T = [TaskId(0, p) for p in range(4)]
SESSION_MS = 10_000


def make(now: int = 0, **kw: Any) -> Membership:
    cfg = MemberConfig("app", "grpc://127.0.0.1:1", session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1_000, **kw)
    codec = StreamsMemberCodec(uuid.uuid4())
    return Membership(cfg, codec.decode_assignment, codec.latest_supported_version, now)


def assignment(gen: int, active: list[TaskId], version: int = 11, common: int = 11,
               code: AssignorError = AssignorError.NONE, protocol: str = "COOPERATIVE") -> SyncAnswered:
    data = StreamsUserDataCodec().encode_assignment(version, common, AssignmentContent(tuple(active)),
                                                    RoundContent(error_code=code))
    return SyncAnswered(SyncResponse(ready=True, generation=gen, protocol=protocol, user_data=data))


def callbacks(actions: list[Action]) -> list[tuple[str, frozenset[TaskId]]]:
    return [(a.kind.value, a.tasks) for a in actions if isinstance(a, RunCallback)]


def join_and_sync(m: Membership, gen: int, active: list[TaskId], now: int = 0, **kw: Any) -> list[Action]:
    """Take the member from needing a join to holding `active` at `gen`; returns the actions of the
    assignment."""
    actions = m.poll()
    assert isinstance(actions[-1], SendJoin) and m.state is MemberState.JOINING
    assert m.handle(JoinAnswered(JoinResponse(member_id="m1")), now) == []
    assert m.state is MemberState.SYNCING and isinstance(m.poll()[0], SendSync)
    return reconcile(m, m.handle(assignment(gen, active, **kw), now), now)


def reconcile(m: Membership, actions: list[Action], now: int = 0) -> list[Action]:
    """What the driver does on CompleteReconciliation: report that the callbacks before it ran."""
    if CompleteReconciliation() in actions:
        assert actions[-1] == CompleteReconciliation() and m.state is MemberState.RECONCILING
        actions = actions + m.handle(ReconciliationCompleted(), now)
    return actions


def test_first_join_sends_the_subscription_and_waits_for_the_round() -> None:
    m = make()
    (join,) = m.poll()
    assert join == SendJoin(member_id="", generation=-1, protocol=RebalanceProtocol.COOPERATIVE, revoked_all=False,
                            subscription_version=11, reported_active=frozenset(), standby=frozenset())
    assert m.poll() == []  # nothing more while the join is in flight
    m.handle(JoinAnswered(JoinResponse(member_id="m1")), 0)
    assert m.poll() == [SendSync("m1", -1, 3_333)]  # a third of the session (10 s), at most 5 s
    assert m.handle(SyncAnswered(SyncResponse(ready=False)), 0) == [] and m.state is MemberState.SYNCING


def test_cooperative_revokes_only_moved_tasks_and_always_calls_assigned() -> None:
    m = make()
    assert callbacks(join_and_sync(m, 1, T[:3])) == [("assigned", frozenset(T[:3]))]
    assert m.state is MemberState.STABLE and m.heartbeat_due(False) == ("m1", 1)
    m.handle(HeartbeatAnswered(HeartbeatResponse(error=GroupError.REBALANCE_IN_PROGRESS.value), 1), 0)
    assert m.state is MemberState.REJOINING and m.active == frozenset(T[:3])
    actions = join_and_sync(m, 2, T[:2])
    assert callbacks(actions) == [("revoked", frozenset({T[2]})), ("assigned", frozenset())]
    assert m.state is MemberState.REJOINING  # rejoins for the follow-up round
    assert callbacks(join_and_sync(m, 3, T[:2])) == [("assigned", frozenset())]
    assert m.state is MemberState.STABLE


def test_the_member_reconciles_before_it_is_stable_and_heartbeats_meanwhile() -> None:
    m = make()
    m.poll()
    m.handle(JoinAnswered(JoinResponse(member_id="m1")), 0)
    actions = m.handle(assignment(1, T[:2]), 0)
    assert actions == [RunCallback(CallbackKind.ASSIGNED, frozenset(T[:2]), 1), CompleteReconciliation()]
    assert m.state is MemberState.RECONCILING and m.heartbeat_due(False) == ("m1", 1)
    # A round announced while the callbacks run: rejoin once they are done.
    m.handle(HeartbeatAnswered(HeartbeatResponse(error=GroupError.REBALANCE_IN_PROGRESS.value), 1), 0)
    assert m.state is MemberState.RECONCILING
    m.handle(ReconciliationCompleted(), 0)
    assert m.state is MemberState.REJOINING and isinstance(m.poll()[-1], SendJoin)


def test_eager_revokes_everything_before_joining_and_still_reports_it() -> None:
    m = make(upgrade_from="2.3")
    join_and_sync(m, 1, T[:2], protocol="EAGER")
    m.handle(HeartbeatAnswered(HeartbeatResponse(error=GroupError.REBALANCE_IN_PROGRESS.value), 1), 0)
    revoke, join = m.poll()
    assert revoke == RunCallback(CallbackKind.REVOKED, frozenset(T[:2]), 1)
    assert isinstance(join, SendJoin) and join.revoked_all and join.reported_active == frozenset(T[:2])
    assert m.active == frozenset()


def test_an_eager_round_makes_a_cooperative_member_behave_eager() -> None:
    m = make()
    join_and_sync(m, 1, T[:2], protocol="EAGER")
    assert m.round_protocol is RebalanceProtocol.EAGER and m.behaves_eager
    m.handle(HeartbeatAnswered(HeartbeatResponse(error=GroupError.REBALANCE_IN_PROGRESS.value), 1), 0)
    assert callbacks(m.poll()) == [("revoked", frozenset(T[:2]))]


def test_upgrade_from_makes_the_member_eager() -> None:
    m = make(upgrade_from="2.3")
    assert m.protocol is RebalanceProtocol.EAGER and m.used_version == 11
    m = make(upgrade_from="1.1")
    assert m.protocol is RebalanceProtocol.EAGER and m.used_version == 2
    assert make().protocol is RebalanceProtocol.COOPERATIVE


def test_lower_assignment_version_downgrades_and_rejoins() -> None:
    m = make()
    join_and_sync(m, 1, T, version=10, common=10)
    assert m.used_version == 10 and m.state is MemberState.REJOINING


def test_higher_commonly_supported_version_upgrades_and_rejoins() -> None:
    m = make(subscription_version=10)
    join_and_sync(m, 1, T, version=10, common=11)
    assert m.used_version == 11 and m.state is MemberState.REJOINING


@pytest.mark.parametrize("error", [GroupError.ILLEGAL_GENERATION, GroupError.UNKNOWN_MEMBER_ID])
def test_falling_out_of_the_group_loses_everything(error: GroupError) -> None:
    m = make()
    join_and_sync(m, 1, T)
    actions = m.handle(HeartbeatAnswered(HeartbeatResponse(error=error.value, message="stale"), 1), 0)
    assert callbacks(actions) == [("lost", frozenset(T))]
    assert m.active == frozenset() and m.generation == -1 and m.state is MemberState.UNJOINED
    assert m.member_id == ("" if error is GroupError.UNKNOWN_MEMBER_ID else "m1")


def test_a_heartbeat_answer_about_an_older_generation_changes_nothing() -> None:
    m = make()
    join_and_sync(m, 2, T)
    stale = HeartbeatAnswered(HeartbeatResponse(error=GroupError.ILLEGAL_GENERATION.value), 1)
    assert m.handle(stale, 0) == [] and m.active == frozenset(T) and m.state is MemberState.STABLE


def test_silence_for_a_whole_session_loses_the_tasks_once() -> None:
    m = make(now=0)
    join_and_sync(m, 1, T, now=0)
    assert m.handle(HeartbeatFailed("down", 1), SESSION_MS) == []  # not yet a whole session
    actions = m.handle(HeartbeatFailed("down", 1), SESSION_MS + 1)
    assert callbacks(actions) == [("lost", frozenset(T))] and m.state is MemberState.UNJOINED
    # The join that follows fails too: back off and try again, nothing more to lose.
    m.poll()
    actions = m.handle(CoordinatorUnreachable("down"), SESSION_MS + 2)
    assert actions == [Backoff(1_000)] and m.state is MemberState.UNJOINED


def test_an_answer_keeps_the_session_alive() -> None:
    m = make(now=0)
    join_and_sync(m, 1, T, now=0)
    m.handle(HeartbeatAnswered(HeartbeatResponse(), 1), SESSION_MS)
    assert m.handle(HeartbeatFailed("down", 1), SESSION_MS + 5) == [] and m.active == frozenset(T)


def test_a_failed_join_is_retried_after_a_backoff_keeping_the_tasks() -> None:
    m = make()
    join_and_sync(m, 1, T)
    m.handle(HeartbeatAnswered(HeartbeatResponse(error=GroupError.REBALANCE_IN_PROGRESS.value), 1), 0)
    m.poll()
    assert m.handle(CoordinatorUnreachable("down"), 100) == [Backoff(1_000)]
    assert m.state is MemberState.REJOINING and m.active == frozenset(T)
    assert isinstance(m.poll()[-1], SendJoin)


def test_fenced_instance_loses_its_tasks_and_fails() -> None:
    m = make(group_instance_id="host-a")
    join_and_sync(m, 1, T)
    fenced = HeartbeatResponse(error=GroupError.FENCED_INSTANCE_ID.value, message="taken over")
    actions = m.handle(HeartbeatAnswered(fenced, 1), 0)
    assert callbacks(actions) == [("lost", frozenset(T))] and m.state is MemberState.FAILED
    assert isinstance(m.failure, GroupRefused) and m.failure.error is GroupError.FENCED_INSTANCE_ID
    assert m.poll() == [] and m.heartbeat_due(True) is None


def test_unreadable_assignment_fails_the_member_with_a_clear_error() -> None:
    m = make()
    m.poll()
    m.handle(JoinAnswered(JoinResponse(member_id="m1")), 0)
    m.handle(SyncAnswered(SyncResponse(ready=True, generation=1, user_data=b"\x00\x00\x00\x63")), 0)
    assert m.state is MemberState.FAILED and isinstance(m.failure, UnreadableAssignment)
    assert "cannot read the assignment" in str(m.failure)


def test_version_probing_code_applies_the_assignment_and_rejoins() -> None:
    m = make()
    actions = join_and_sync(m, 1, T[:2], code=AssignorError.VERSION_PROBING)
    assert callbacks(actions) == [("assigned", frozenset(T[:2]))] and m.state is MemberState.REJOINING


@pytest.mark.parametrize("code", [AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA, AssignorError.ASSIGNMENT_ERROR])
def test_assignment_error_codes_are_a_typed_failure_and_nothing_is_applied(code: AssignorError) -> None:
    m = make()
    join_and_sync(m, 1, T[:2])
    m.handle(HeartbeatAnswered(HeartbeatResponse(error=GroupError.REBALANCE_IN_PROGRESS.value), 1), 0)
    actions = join_and_sync(m, 2, T, code=code)
    assert callbacks(actions) == [("lost", frozenset(T[:2]))]  # given up, never "assigned"
    assert isinstance(m.failure, AssignmentErrorReceived) and m.failure.code is code
    assert m.failure.assignor_error == int(code) and m.state is MemberState.FAILED


def test_shutdown_requested_revokes_leaves_and_closes() -> None:
    m = make()
    join_and_sync(m, 1, T[:2])
    m.handle(HeartbeatAnswered(HeartbeatResponse(error=GroupError.REBALANCE_IN_PROGRESS.value), 1), 0)
    actions = join_and_sync(m, 2, [], code=AssignorError.SHUTDOWN_REQUESTED)
    assert actions == [RunCallback(CallbackKind.REVOKED, frozenset(T[:2]), 2), SendLeave("m1")]
    assert m.state is MemberState.CLOSED and m.shutdown_requested and m.active == frozenset()


@pytest.mark.parametrize("static", [False, True])
def test_close_revokes_and_only_a_dynamic_member_leaves(static: bool) -> None:
    m = make(group_instance_id="a" if static else None)
    join_and_sync(m, 1, T)
    actions = m.handle(CloseRequested(leave=not static), 0)
    expected = [RunCallback(CallbackKind.REVOKED, frozenset(T), 1)] + ([] if static else [SendLeave("m1")])
    assert actions == expected and m.state is MemberState.CLOSED
    assert m.handle(CloseRequested(leave=True), 0) == []  # closing twice does nothing more


def test_a_crash_in_the_driver_is_its_own_failure_not_a_wire_error() -> None:
    m = make()
    join_and_sync(m, 1, T)
    actions = m.handle(Crashed(KeyError("bug")), 0)
    assert callbacks(actions) == [("lost", frozenset(T))]
    assert isinstance(m.failure, MemberCrashed) and not isinstance(m.failure, GroupRefused)


def test_answers_after_the_member_stopped_change_nothing() -> None:
    m = make()
    join_and_sync(m, 1, T)
    m.handle(Crashed(RuntimeError("bug")), 0)
    assert m.handle(assignment(2, T), 0) == [] and m.handle(HeartbeatFailed("x", 1), 10**9) == []


def test_the_transition_table_is_closed_and_terminal_states_are_final() -> None:
    assert set(TRANSITIONS) == set(MemberState)
    assert TRANSITIONS[MemberState.CLOSED] == frozenset()
    assert TRANSITIONS[MemberState.FAILED] == frozenset({MemberState.CLOSED})


# Any sequence of answers keeps the member's books straight: it holds tasks only with a generation,
# a lost or revoked task is one it held, and once stopped it holds nothing.
ANSWERS = st.one_of(
    st.sampled_from([e.value for e in GroupError]).map(
        lambda e: ("heartbeat", HeartbeatResponse(error=e, message="x"))),
    st.sampled_from([e.value for e in GroupError]).map(lambda e: ("join", JoinResponse(error=e, member_id="m"))),
    st.tuples(st.integers(1, 6), st.lists(st.sampled_from(T), max_size=4, unique=True),
              st.sampled_from(list(AssignorError)), st.sampled_from(["EAGER", "COOPERATIVE"])).map(
        lambda a: ("sync", assignment(a[0], a[1], code=a[2], protocol=a[3]).response)),
    st.just(("unreachable", None)),
    st.just(("tick", None)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ANSWERS, max_size=25), st.booleans())
def test_any_answer_sequence_keeps_the_books_straight(answers: list[tuple[str, Any]], static: bool) -> None:
    m = make(group_instance_id="s" if static else None)
    held: frozenset[TaskId] = frozenset()
    now = 0
    for kind, response in answers:
        now += 3_000
        actions = m.poll()
        event: Event
        if kind == "join":
            event = JoinAnswered(response)
        elif kind == "sync":
            event = SyncAnswered(response)
        elif kind == "heartbeat":
            event = HeartbeatAnswered(response, m.generation)
        elif kind == "unreachable":
            event = CoordinatorUnreachable("down")
        else:
            event = HeartbeatFailed("down", m.generation)
        actions = reconcile(m, actions + m.handle(event, now), now)
        held = follow(held, actions)
        assert held == m.active
        if m.active:
            assert m.generation >= 0
        if m.stopped:
            assert not m.active and not m.heartbeat_due(True)
    assert follow(held, m.handle(CloseRequested(leave=True), now)) == frozenset()


def follow(held: frozenset[TaskId], actions: list[Action]) -> frozenset[TaskId]:
    """What the listener holds after these callbacks; each must make sense for what it held."""
    for action in actions:
        if isinstance(action, RunCallback):
            if action.kind is CallbackKind.ASSIGNED:
                assert not held & action.tasks, "assigned a task it already held"
                held |= action.tasks
            else:
                assert action.tasks <= held, f"{action.kind.value} tasks it did not hold"
                held -= action.tasks
    return held


# ---- configuration -----------------------------------------------------------------------------
NOT_PROPERTIES = {"coordinator_address", "protocol", "subscription_version", "resume_version"}


def test_from_config_reads_every_field_from_the_key_of_the_same_name() -> None:
    props = {"application.id": "app-x", "bootstrap.servers": "b:1", "group.instance.id": "host-7",
             "session.timeout.ms": "20000", "heartbeat.interval.ms": 2_000, "max.poll.interval.ms": "60000",
             "upgrade.from": "2.3", "num.stream.threads": 4}
    config = resolve(props)
    member = MemberConfig.from_config(config, "grpc://driver:1")
    defaults = MemberConfig("app", "grpc://driver:1")
    properties = [f.name for f in dataclasses.fields(MemberConfig) if f.name not in NOT_PROPERTIES]
    assert {name.replace("_", ".") for name in properties} == set(props) - {"bootstrap.servers"}
    for name in properties:
        assert getattr(member, name) == config.get(name.replace("_", ".")) != getattr(defaults, name), name
    assert (member.coordinator_address, member.protocol, member.subscription_version, member.resume_version) == (
        "grpc://driver:1", None, None, None)


@pytest.mark.parametrize(("upgrade_from", "resume", "latest", "first"), [
    (None, 10, 11, 10),  # restarted on a new release: it goes on speaking what the group spoke with it
    (None, None, 11, 11),
    (None, 11, 10, 10),  # restarted on an older release: never above what it can speak
    ("1.1", 10, 11, 2),  # upgrade.from keeps the old metadata, whatever it spoke before
])
def test_a_restarted_member_resumes_at_the_version_it_spoke(upgrade_from: str | None, resume: int | None,
                                                            latest: int, first: int) -> None:
    codec = StreamsMemberCodec(uuid.uuid4())
    config = MemberConfig("app", "grpc://driver:1", upgrade_from=upgrade_from, resume_version=resume)
    assert Membership(config, codec.decode_assignment, latest, 0).used_version == first


def test_a_member_configured_with_upgrade_from_starts_eager_at_the_old_version() -> None:
    config = resolve({"application.id": "app", "bootstrap.servers": "b:1", "upgrade.from": "1.1"})
    assert MemberConfig.from_config(config, "grpc://driver:1").effective() == (RebalanceProtocol.EAGER, 2)
