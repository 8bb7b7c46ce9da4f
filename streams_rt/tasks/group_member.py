"""The thin driver of the member protocol that a task host embeds: it owns the threads and the RPC
clients, and carries out what the pure `Membership` (membership.py) asks for.

One thread runs the protocol: it sends joins and syncs and runs the listener callbacks, one at a
time. A second thread only heartbeats, on its own connection, so a slow callback (commit, checkpoint,
close) does not cost the session; it queues what the coordinator said and the protocol thread feeds
it to the state machine."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from streams_rt.protocol import RebalanceProtocol, TaskId
from streams_rt.rpc.client import AuthenticationRefused, CoordinatorUnavailable, GroupClient
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    LeaveRequest,
    LeaveResponse,
    Request,
    Response,
    SyncRequest,
    SyncResponse,
)
from streams_rt.tasks.membership import (
    Action,
    AuthenticationFailed,
    Backoff,
    CallbackKind,
    CloseRequested,
    CompleteReconciliation,
    CoordinatorUnreachable,
    Crashed,
    Event,
    HeartbeatAnswered,
    HeartbeatFailed,
    JoinAnswered,
    MemberConfig,
    MemberFailed,
    Membership,
    MemberState,
    ReceivedAssignment,
    ReconciliationCompleted,
    RunCallback,
    SendJoin,
    SendLeave,
    SendSync,
    SyncAnswered,
)
from streams_rt.tasks.metrics import ListenerMetrics

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Response)

SYNC_EXTRA_TIMEOUT_S = 0.5  # a sync is held up to its wait_ms: give the RPC that much longer


class MemberCodec(Protocol):
    """Encodes this member's subscription and decodes its assignment (Kafka Streams' user data)."""

    latest_supported_version: int

    def encode_subscription(self, version: int, active: frozenset[TaskId], standby: frozenset[TaskId]) -> bytes: ...

    def decode_assignment(self, data: bytes) -> ReceivedAssignment: ...


class TaskListener(Protocol):
    """KIP-429's ConsumerRebalanceListener, over tasks instead of partitions."""

    def on_tasks_revoked(self, tasks: frozenset[TaskId], generation: int) -> None: ...

    def on_tasks_assigned(self, tasks: frozenset[TaskId], generation: int) -> None: ...

    def on_tasks_lost(self, tasks: frozenset[TaskId], generation: int) -> None: ...


class GroupTransport(Protocol):
    """What the member needs of an RPC client (`streams_rt.rpc.GroupClient`)."""

    def call(self, request: Request, response_cls: type[R], *, extra_timeout_s: float = 0.0) -> R: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class MemberStatus:
    """A consistent snapshot of the member, taken under its lock."""

    state: MemberState
    member_id: str
    generation: int
    active: frozenset[TaskId]
    standby: frozenset[TaskId]
    protocol: RebalanceProtocol
    round_protocol: RebalanceProtocol
    behaves_eager: bool
    used_version: int
    assignment_version: int
    failure: MemberFailed | None
    shutdown_requested: bool


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class GroupMember:
    """`connect` makes one transport to the coordinator (two are made: protocol and heartbeats);
    `clock` gives monotonic milliseconds. Both default to the real thing."""

    def __init__(
        self,
        config: MemberConfig,
        codec: MemberCodec,
        listener: TaskListener,
        *,
        connect: Callable[[], GroupTransport] | None = None,
        clock: Callable[[], int] = monotonic_ms,
    ) -> None:
        self.config = config
        self._codec = codec
        self._clock = clock
        self._core = Membership(config, codec.decode_assignment, codec.latest_supported_version, clock())
        self._callbacks: dict[CallbackKind, Callable[[frozenset[TaskId], int], None]] = {
            CallbackKind.REVOKED: listener.on_tasks_revoked,
            CallbackKind.ASSIGNED: listener.on_tasks_assigned,
            CallbackKind.LOST: listener.on_tasks_lost,
        }
        make: Callable[[], GroupTransport] = connect or (lambda: GroupClient(config.coordinator_address))
        self._client = make()
        self._hb_client = make()
        self.listener_metrics = ListenerMetrics()
        self._changed = threading.Condition()  # guards the core; notified after every event
        self._events: queue.SimpleQueue[tuple[Event, int]] = queue.SimpleQueue()  # heartbeat news
        self._callback_running = False
        self._closing = threading.Event()
        name = config.group_instance_id or "dynamic"
        self._thread = threading.Thread(target=self._run, name=f"group-member-{name}", daemon=True)
        self._hb_thread = threading.Thread(target=self._heartbeat_loop, name=f"group-heartbeat-{name}", daemon=True)

    # ---- life cycle ----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()
        self._hb_thread.start()

    def close(self, *, leave: bool | None = None, timeout_s: float = 10.0) -> None:
        """Stop both threads, revoke what the member holds and (dynamic members, by default) leave."""
        self._closing.set()
        with self._changed:
            self._changed.notify_all()
        for thread in (self._thread, self._hb_thread):
            if thread.is_alive():
                thread.join(timeout_s)
        if leave is None:
            leave = self.config.group_instance_id is None
        self._carry_out(self._apply(CloseRequested(leave), self._clock()))
        self._client.close()
        self._hb_client.close()

    def status(self) -> MemberStatus:
        with self._changed:
            return self._status()

    def _status(self) -> MemberStatus:
        core = self._core
        return MemberStatus(
            state=core.state, member_id=core.member_id, generation=core.generation, active=core.active,
            standby=core.standby, protocol=core.protocol, round_protocol=core.round_protocol,
            behaves_eager=core.behaves_eager, used_version=core.used_version,
            assignment_version=core.assignment_version, failure=core.failure,
            shutdown_requested=core.shutdown_requested,
        )

    def wait_for(self, predicate: Callable[[MemberStatus], bool], timeout_s: float) -> MemberStatus | None:
        """Block until predicate(status) holds (re-checked after every event); the status, or None
        on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(status := self._status()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)
            return status

    # ---- the protocol thread -------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._closing.is_set():
                with self._changed:
                    if self._core.stopped:
                        return
                    actions = self._core.poll()
                if actions:
                    self._carry_out(actions)
                    continue
                try:  # STABLE: the heartbeat thread brings the news
                    event, at_ms = self._events.get(timeout=self.config.heartbeat_interval_ms / 1000)
                except queue.Empty:
                    continue
                self._carry_out(self._apply(event, at_ms))
        except Exception as e:  # a bug must stop the member visibly, not leave it silently half-joined
            log.exception("member %s: the protocol thread failed", self.config.group_instance_id)
            self._carry_out(self._apply(Crashed(e), self._clock()))

    def _apply(self, event: Event, now_ms: int) -> list[Action]:
        with self._changed:
            actions = self._core.handle(event, now_ms)
            self._changed.notify_all()
        return actions

    def _carry_out(self, actions: Iterable[Action]) -> None:
        """Do what the state machine asked, in order; answers are fed back, and what they lead to
        is done next."""
        work = deque(actions)
        while work:
            action = work.popleft()
            if isinstance(action, RunCallback):
                self._run_callback(action)
            elif isinstance(action, SendJoin):
                work.extend(self._send(self._join_request(action), JoinResponse, JoinAnswered))
            elif isinstance(action, SendSync):
                request = SyncRequest(
                    group_id=self.config.application_id, member_id=action.member_id,
                    generation=action.generation, wait_ms=action.wait_ms,
                    group_instance_id=self.config.group_instance_id,
                )
                work.extend(self._send(request, SyncResponse, SyncAnswered, SYNC_EXTRA_TIMEOUT_S))
            elif isinstance(action, SendLeave):
                self._leave(action)
            elif isinstance(action, CompleteReconciliation):
                work.extend(self._apply(ReconciliationCompleted(), self._clock()))
            elif isinstance(action, Backoff):
                self._closing.wait(action.ms / 1000)

    def _send(self, request: Request, response_cls: type[R], answered: Callable[[R], Event],
              extra_timeout_s: float = 0.0) -> list[Action]:
        try:
            response = self._client.call(request, response_cls, extra_timeout_s=extra_timeout_s)
        except CoordinatorUnavailable as e:
            return self._apply(CoordinatorUnreachable(str(e)), self._clock())
        except AuthenticationRefused as e:
            return self._apply(AuthenticationFailed(str(e)), self._clock())
        return self._apply(answered(response), self._clock())

    def _join_request(self, join: SendJoin) -> JoinRequest:
        return JoinRequest(
            group_id=self.config.application_id,
            member_id=join.member_id,
            protocol=join.protocol.name,
            revoked_all=join.revoked_all,
            user_data=self._codec.encode_subscription(join.subscription_version, join.reported_active, join.standby),
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.max_poll_interval_ms,
            group_instance_id=self.config.group_instance_id,
            capacity=self.config.num_stream_threads,
            generation=join.generation,
        )

    def _leave(self, leave: SendLeave) -> None:
        """Best effort: if it fails, the session timeout removes the member."""
        request = LeaveRequest(group_id=self.config.application_id, member_id=leave.member_id,
                               group_instance_id=self.config.group_instance_id)
        try:
            response = self._client.call(request, LeaveResponse)
        except (CoordinatorUnavailable, AuthenticationRefused) as e:
            log.info("member %s could not leave cleanly: %s", leave.member_id, e)
            return
        if response.error == GroupError.NONE.value:
            log.info("member %s left the group", leave.member_id)
        else:
            log.info("member %s could not leave cleanly: %s: %s", leave.member_id, response.error, response.message)

    def _run_callback(self, callback: RunCallback) -> None:
        """Run one listener callback and time it; an exception is logged, the assignment stands.
        The heartbeat thread keeps the session meanwhile."""
        with self._changed:
            self._callback_running = True
            self._changed.notify_all()
        started = time.perf_counter()
        try:
            self._callbacks[callback.kind](callback.tasks, callback.generation)
        except Exception:
            log.exception("member %s: on_tasks_%s(%s) failed", self._core.member_id, callback.kind.value,
                          sorted(map(str, callback.tasks)))
        finally:
            with self._changed:
                self._callback_running = False
            self.listener_metrics.sensors[callback.kind.value].record((time.perf_counter() - started) * 1000)

    # ---- the heartbeat thread ------------------------------------------------------------------
    def _heartbeat_loop(self) -> None:
        """At most one heartbeat per interval while one is due. The coordinator holds each heartbeat
        for up to the interval and answers at once when a rebalance starts, so a member learns of a
        round without waiting out an interval. After news, wait for the protocol thread to act."""
        interval_s = self.config.heartbeat_interval_ms / 1000
        while not self._closing.is_set():
            with self._changed:
                due = self._core.heartbeat_due(self._callback_running)
                if due is None:
                    self._changed.wait(interval_s)
                    continue
            member_id, generation = due
            started = time.monotonic()
            request = HeartbeatRequest(
                group_id=self.config.application_id, member_id=member_id, generation=generation,
                group_instance_id=self.config.group_instance_id, wait_ms=self.config.heartbeat_interval_ms,
            )
            try:
                response = self._hb_client.call(request, HeartbeatResponse, extra_timeout_s=interval_s)
            except CoordinatorUnavailable as e:
                self._events.put((HeartbeatFailed(str(e), generation), self._clock()))
                self._closing.wait(interval_s)
                continue
            except AuthenticationRefused as e:
                self._events.put((AuthenticationFailed(str(e)), self._clock()))
                return
            self._events.put((HeartbeatAnswered(response, generation), self._clock()))
            if response.error == GroupError.NONE.value:
                self._closing.wait(max(0.0, interval_s - (time.monotonic() - started)))
            else:
                with self._changed:
                    self._changed.wait(interval_s)
