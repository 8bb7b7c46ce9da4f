"""The member's KIP-429 rules, driven directly (no coordinator): which callbacks run, with what."""

from __future__ import annotations

import uuid

import pytest

from streams_rt.assignment import RebalanceProtocol
from streams_rt.coordinator.user_data import AssignmentContent, StreamsUserDataCodec
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import HeartbeatResponse, SyncResponse
from streams_rt.protocol import AssignorError, TaskId
from streams_rt.tasks.group_member import AssignmentErrorReceived, GroupMember, MemberConfig, MemberState
from streams_rt.tasks.streams_codec import StreamsMemberCodec

T = [TaskId(0, p) for p in range(4)]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, frozenset[TaskId]]] = []

    def on_tasks_revoked(self, tasks: frozenset[TaskId], generation: int) -> None:
        self.calls.append(("revoked", tasks))

    def on_tasks_assigned(self, tasks: frozenset[TaskId], generation: int) -> None:
        self.calls.append(("assigned", tasks))

    def on_tasks_lost(self, tasks: frozenset[TaskId], generation: int) -> None:
        self.calls.append(("lost", tasks))


def make(**kw: object) -> tuple[GroupMember, Recorder]:
    rec = Recorder()
    cfg = MemberConfig("app", "grpc://127.0.0.1:1", **kw)  # type: ignore[arg-type]
    return GroupMember(cfg, StreamsMemberCodec(uuid.uuid4()), rec), rec


def sync(gen: int, active: list[TaskId], version: int = 11, common: int = 11) -> SyncResponse:
    data = StreamsUserDataCodec().encode_assignment(version, common, AssignmentContent(active_tasks=tuple(active)))
    return SyncResponse(ready=True, generation=gen, user_data=data)


def test_cooperative_revokes_only_moved_tasks_and_always_calls_assigned() -> None:
    m, rec = make()
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(1, T[:3]))
    assert rec.calls == [("assigned", frozenset(T[:3]))] and m.state is MemberState.STABLE
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(2, T[:2]))
    assert rec.calls[1:] == [("revoked", frozenset({T[2]})), ("assigned", frozenset())]
    assert m.state is MemberState.JOINING  # rejoins for the follow-up round
    m._on_assignment(sync(3, T[:2]))
    assert rec.calls[3:] == [("assigned", frozenset())] and m.state is MemberState.STABLE


def test_upgrade_from_makes_the_member_eager() -> None:
    m, _ = make(upgrade_from="2.3")
    assert m.protocol is RebalanceProtocol.EAGER and m.used_version == 11
    m, _ = make(upgrade_from="1.1")
    assert m.protocol is RebalanceProtocol.EAGER and m.used_version == 2
    m, _ = make()
    assert m.protocol is RebalanceProtocol.COOPERATIVE


def test_lower_assignment_version_downgrades_and_rejoins() -> None:
    m, _ = make()
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(1, T, version=10, common=10))
    assert m.used_version == 10 and m.state is MemberState.JOINING


def test_illegal_generation_loses_everything() -> None:
    m, rec = make()
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(1, T))
    m.member_id = "m1"
    ok = m._handle_error(HeartbeatResponse(error=GroupError.ILLEGAL_GENERATION.value, message="stale"))
    assert not ok and rec.calls[-1] == ("lost", frozenset(T))
    assert m.active == frozenset() and m.state is MemberState.UNJOINED and m.member_id == "m1"


def test_unknown_member_loses_everything_and_forgets_member_id() -> None:
    m, rec = make()
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(1, T))
    m.member_id = "m1"
    m._handle_error(HeartbeatResponse(error=GroupError.UNKNOWN_MEMBER_ID.value))
    assert rec.calls[-1] == ("lost", frozenset(T)) and m.member_id == ""


def test_rebalance_in_progress_keeps_tasks() -> None:
    m, rec = make()
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(1, T))
    m._handle_error(HeartbeatResponse(error=GroupError.REBALANCE_IN_PROGRESS.value))
    assert m.active == frozenset(T) and m.state is MemberState.JOINING and rec.calls[-1][0] == "assigned"


def test_callback_exception_does_not_undo_the_assignment() -> None:
    m, rec = make()

    def boom(tasks: frozenset[TaskId], generation: int) -> None:
        raise RuntimeError("listener bug")

    rec.on_tasks_assigned = boom  # type: ignore[method-assign]
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(1, T))
    assert m.active == frozenset(T) and m.listener_metrics.sensors["assigned"].count == 1
    assert set(m.listener_metrics.snapshot()) >= {"partitions-assigned-latency-avg", "partitions-lost-latency-max"}


def test_invalid_member_transition_is_an_assertion() -> None:
    m, _ = make()
    m._set_state(MemberState.FAILED)
    with pytest.raises(AssertionError):
        m._set_state(MemberState.STABLE)


def test_unreadable_assignment_fails_the_member_with_a_clear_error() -> None:
    from streams_rt.tasks.group_member import MemberFailed

    m, _ = make()
    m._set_state(MemberState.JOINING)
    with pytest.raises(MemberFailed, match="cannot read the assignment"):
        m._on_assignment(SyncResponse(ready=True, generation=1, user_data=b"\x00\x00\x00\x63"))


def test_fenced_instance_loses_its_tasks_and_fails() -> None:
    m, rec = make(group_instance_id="host-a")
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(1, T))
    m.member_id = "old"

    def fenced(*_a: object, **_k: object) -> HeartbeatResponse:
        return HeartbeatResponse(error=GroupError.FENCED_INSTANCE_ID.value, message="taken over")

    m._act_on_heartbeat = lambda: m._handle_error(fenced())  # type: ignore[method-assign]
    m._run()
    assert m.state is MemberState.FAILED and m.failure is not None
    assert m.failure.error is GroupError.FENCED_INSTANCE_ID
    assert rec.calls[-1] == ("lost", frozenset(T)) and m.active == frozenset()


def sync_with_error(gen: int, active: list[TaskId], code: AssignorError) -> SyncResponse:
    content = AssignmentContent(active_tasks=tuple(active), error_code=code)
    return SyncResponse(ready=True, generation=gen, user_data=StreamsUserDataCodec().encode_assignment(11, 11, content))


def test_version_probing_code_applies_the_assignment_and_rejoins() -> None:
    m, rec = make()
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync_with_error(1, T[:2], AssignorError.VERSION_PROBING))
    assert rec.calls == [("assigned", frozenset(T[:2]))] and m.state is MemberState.JOINING


@pytest.mark.parametrize("code", [AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA, AssignorError.ASSIGNMENT_ERROR])
def test_assignment_error_codes_are_a_typed_failure_and_nothing_is_applied(code: AssignorError) -> None:
    m, rec = make()
    m._set_state(MemberState.JOINING)
    m._on_assignment(sync(1, T[:2]))
    m._set_state(MemberState.JOINING)
    with pytest.raises(AssignmentErrorReceived) as e:
        m._on_assignment(sync_with_error(2, T, code))
    assert e.value.code is code and e.value.assignor_error == int(code)
    assert m.active == frozenset(T[:2]) and m.generation == 1 and rec.calls == [("assigned", frozenset(T[:2]))]
