"""The member's driver: threads, injected transports, callbacks. The rules themselves are tested on
the pure state machine (test_membership.py); real coordinators are in tests/coordinator."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, TypeVar

from streams_rt.coordinator.user_data import AssignmentContent, StreamsUserDataCodec
from streams_rt.protocol import TaskId
from streams_rt.rpc.client import CoordinatorUnavailable
from streams_rt.rpc.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    LeaveRequest,
    LeaveResponse,
    Message,
    Response,
    SyncRequest,
    SyncResponse,
)
from streams_rt.tasks.group_member import GroupMember
from streams_rt.tasks.membership import MemberConfig, MemberCrashed, MemberState
from streams_rt.tasks.streams_codec import StreamsMemberCodec

R = TypeVar("R", bound=Response)
T = [TaskId(0, p) for p in range(4)]


class ScriptedCoordinator:
    """Answers like a one-member coordinator: every join starts generation n+1 with `tasks`. Shared
    by the member's two transports; records every request."""

    def __init__(self, tasks: list[TaskId]) -> None:
        self.tasks = tasks
        self.requests: list[Message] = []
        self.generation = 0
        self.down = threading.Event()
        self.announce_rebalance = threading.Event()  # the next heartbeat answers REBALANCE_IN_PROGRESS
        self._lock = threading.Lock()

    def transport(self) -> ScriptedTransport:
        return ScriptedTransport(self)

    def answer(self, request: Message) -> Response:
        with self._lock:
            self.requests.append(request)
        if self.down.is_set():
            raise CoordinatorUnavailable("scripted: down")
        if isinstance(request, JoinRequest):
            self.generation += 1
            return JoinResponse(member_id="m1")
        if isinstance(request, SyncRequest):
            data = StreamsUserDataCodec().encode_assignment(11, 11, AssignmentContent(tuple(self.tasks)))
            return SyncResponse(ready=True, generation=self.generation, user_data=data)
        if isinstance(request, HeartbeatRequest) and self.announce_rebalance.is_set():
            self.announce_rebalance.clear()
            return HeartbeatResponse(error="REBALANCE_IN_PROGRESS")
        if isinstance(request, HeartbeatRequest):
            time.sleep(request.wait_ms / 1000 / 10)
            return HeartbeatResponse()
        assert isinstance(request, LeaveRequest)
        return LeaveResponse()

    def count(self, kind: type[Message]) -> int:
        with self._lock:
            return sum(isinstance(r, kind) for r in self.requests)


class ScriptedTransport:
    def __init__(self, coordinator: ScriptedCoordinator) -> None:
        self.coordinator = coordinator

    def call(self, request: Message, response_cls: type[R], *, extra_timeout_s: float = 0.0) -> R:
        response = self.coordinator.answer(request)
        assert isinstance(response, response_cls)
        return response

    def close(self) -> None:
        pass


class Listener:
    def __init__(self, revoke_delay_s: float = 0.0, fail_assigned: bool = False) -> None:
        self.calls: list[tuple[str, frozenset[TaskId]]] = []
        self.revoke_delay_s = revoke_delay_s
        self.fail_assigned = fail_assigned

    def on_tasks_revoked(self, tasks: frozenset[TaskId], generation: int) -> None:
        self.calls.append(("revoked", tasks))
        time.sleep(self.revoke_delay_s)

    def on_tasks_assigned(self, tasks: frozenset[TaskId], generation: int) -> None:
        self.calls.append(("assigned", tasks))
        if self.fail_assigned:
            raise RuntimeError("listener bug")

    def on_tasks_lost(self, tasks: frozenset[TaskId], generation: int) -> None:
        self.calls.append(("lost", tasks))


def member(coordinator: ScriptedCoordinator, listener: Listener, **kw: Any) -> GroupMember:
    config = MemberConfig("app", "scripted", heartbeat_interval_ms=100, session_timeout_ms=1_000, **kw)
    return GroupMember(config, StreamsMemberCodec(uuid.uuid4()), listener, connect=coordinator.transport)


def test_joins_syncs_heartbeats_and_a_dynamic_member_leaves_on_close() -> None:
    coordinator, listener = ScriptedCoordinator(T[:2]), Listener()
    m = member(coordinator, listener)
    m.start()
    status = m.wait_for(lambda s: s.state is MemberState.STABLE, 5)
    assert status is not None and status.active == frozenset(T[:2]) and status.generation == 1
    deadline = time.monotonic() + 5
    while coordinator.count(HeartbeatRequest) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert coordinator.count(HeartbeatRequest) >= 3
    m.close()
    assert listener.calls == [("assigned", frozenset(T[:2])), ("revoked", frozenset(T[:2]))]
    assert coordinator.count(LeaveRequest) == 1 and m.status().state is MemberState.CLOSED


def test_a_static_member_does_not_leave_on_close() -> None:
    coordinator = ScriptedCoordinator(T[:1])
    m = member(coordinator, Listener(), group_instance_id="a")
    m.start()
    assert m.wait_for(lambda s: s.state is MemberState.STABLE, 5)
    m.close()
    assert coordinator.count(LeaveRequest) == 0


def test_heartbeats_go_on_while_a_slow_revoke_runs() -> None:
    coordinator, listener = ScriptedCoordinator(T[:2]), Listener(revoke_delay_s=0.6)
    m = member(coordinator, listener)
    m.start()
    assert m.wait_for(lambda s: s.state is MemberState.STABLE, 5)
    coordinator.tasks = T[:1]  # the next round moves T[1] away: revoked on the protocol thread
    coordinator.announce_rebalance.set()
    started = coordinator.count(HeartbeatRequest)
    status = m.wait_for(lambda s: s.active == frozenset(T[:1]) and s.state is MemberState.STABLE, 10)
    assert status is not None and ("revoked", frozenset({T[1]})) in listener.calls
    assert coordinator.count(HeartbeatRequest) - started >= 3, "heartbeats kept the session during the revoke"
    m.close()


def test_a_listener_exception_is_logged_and_the_assignment_stands() -> None:
    coordinator = ScriptedCoordinator(T)
    m = member(coordinator, Listener(fail_assigned=True))
    m.start()
    status = m.wait_for(lambda s: s.state is MemberState.STABLE, 5)
    assert status is not None and status.active == frozenset(T)
    assert m.listener_metrics.sensors["assigned"].count == 1
    assert set(m.listener_metrics.snapshot()) >= {"partitions-assigned-latency-avg", "partitions-lost-latency-max"}
    m.close()


def test_a_silent_coordinator_costs_the_tasks_after_a_session_and_the_member_rejoins() -> None:
    coordinator, listener = ScriptedCoordinator(T[:2]), Listener()
    m = member(coordinator, listener)
    m.start()
    assert m.wait_for(lambda s: s.state is MemberState.STABLE, 5)
    coordinator.down.set()
    assert m.wait_for(lambda s: s.state is MemberState.UNJOINED and not s.active, 5)
    assert ("lost", frozenset(T[:2])) in listener.calls
    coordinator.down.clear()
    status = m.wait_for(lambda s: s.state is MemberState.STABLE, 5)
    assert status is not None and status.active == frozenset(T[:2])
    m.close()


def test_a_bug_in_the_driver_stops_the_member_visibly() -> None:
    class BrokenCodec(StreamsMemberCodec):
        def encode_subscription(self, version: int, active: frozenset[TaskId], standby: frozenset[TaskId]) -> bytes:
            raise ZeroDivisionError("bug")

    coordinator = ScriptedCoordinator(T)
    config = MemberConfig("app", "scripted", heartbeat_interval_ms=100)
    m = GroupMember(config, BrokenCodec(uuid.uuid4()), Listener(), connect=coordinator.transport)
    m.start()
    status = m.wait_for(lambda s: s.state is MemberState.FAILED, 5)
    assert status is not None and isinstance(status.failure, MemberCrashed) and "bug" in str(status.failure)
    m.close()
