"""The coordinator's Arrow Flight endpoint: decodes each action against its schema and bounds,
applies it to the pure `Group` under one lock, computes rounds off that lock (RoundRunner), and drives
the group's clock from a ticker thread. Calls without the application's secret never get here
(SecureFlightServer); whatever fails inside a call reaches the client as a typed error, never a
traceback."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

from streams_rt.coordinator.admission import check_join
from streams_rt.coordinator.connection_watch import ConnectionWatch
from streams_rt.coordinator.errors import SubscriptionRejected
from streams_rt.coordinator.group import Group, GroupState, RoundAssigner
from streams_rt.coordinator.group_record import GroupRecord
from streams_rt.coordinator.reachability import UnreachableProber, probe_host
from streams_rt.coordinator.round_runner import RoundRunner
from streams_rt.coordinator.saver import RecordSaver
from streams_rt.coordinator.silence import SilenceWatch
from streams_rt.coordinator.task_reports import TaskReports
from streams_rt.protocol import RebalanceProtocol
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.errors import GroupError, GroupErrorException, abbreviate, shorten
from streams_rt.rpc.messages import (
    REQUESTS,
    DescribeRequest,
    DescribeResponse,
    DrainMemberRequest,
    DrainMemberResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    LeaveRequest,
    LeaveResponse,
    ReportTasksRequest,
    ReportTasksResponse,
    ReportUnreachableRequest,
    ReportUnreachableResponse,
    Request,
    RequestShutdownRequest,
    RequestShutdownResponse,
    Response,
    SetProtocolRequest,
    SetProtocolResponse,
    StatusRequest,
    StatusResponse,
    SyncRequest,
    SyncResponse,
    TaskStatusRequest,
    TaskStatusResponse,
)
from streams_rt.rpc.settings import ControlPlaneSettings
from streams_rt.rpc.tasks import parse_reports
from streams_rt.rpc.transport import SecureFlightServer, TlsIdentity

log = logging.getLogger(__name__)

MAX_SYNC_WAIT_MS = 5_000
MEMBER_CALLS = (JoinRequest, SyncRequest, HeartbeatRequest)  # a live member always has one of these in flight
# Answers that fence a member (it must drop its tasks or stop): each is logged, with why.
FENCING = frozenset({GroupError.ILLEGAL_GENERATION, GroupError.UNKNOWN_MEMBER_ID, GroupError.FENCED_INSTANCE_ID})


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class CoordinatorServer(SecureFlightServer):
    def __init__(
        self,
        group: Group,
        *,
        assigner: RoundAssigner,
        decode_subscription: Callable[[bytes], Any],
        describe: Callable[[], dict[str, Any]],
        status: Callable[[], dict[str, Any]],
        set_protocol: Callable[[RebalanceProtocol | None], None],
        request_shutdown: Callable[[str], None],
        drain_member: Callable[[str, str], None] | None = None,
        save: Callable[[GroupRecord], None] | None = None,
        generation_formed: Callable[[], None] | None = None,
        task_reports: TaskReports | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        tick_interval_ms: int = 50,
        clock: Callable[[], int] = monotonic_ms,
        secret: SharedSecret | None = None,
        tls: TlsIdentity | None = None,
        settings: ControlPlaneSettings = ControlPlaneSettings(),
    ) -> None:
        """`group` is computed by `assigner` off the lock. With `secret`, every call must carry it;
        without, the server binds loopback only. `settings` bounds every request. `generation_formed`
        runs under the lock each time a round is applied (the history, the log)."""
        self._group = group
        self._settings = settings
        self._decode = decode_subscription
        self._describe = describe
        self._status = status
        self._generation_formed = generation_formed
        self._set_protocol = set_protocol
        self._request_shutdown = request_shutdown
        self._drain_member = drain_member
        self._task_reports = task_reports or TaskReports({})
        self._clock = clock
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._tick_s = tick_interval_ms / 1000
        self._handlers: dict[str, Callable[[Any], Response]] = {
            JoinRequest.ACTION: self._join,
            LeaveRequest.ACTION: self._leave,
            DescribeRequest.ACTION: self._describe_action,
            SetProtocolRequest.ACTION: self._set_protocol_action,
            RequestShutdownRequest.ACTION: self._request_shutdown_action,
            DrainMemberRequest.ACTION: self._drain_member_action,
            ReportTasksRequest.ACTION: self._report_tasks,
            TaskStatusRequest.ACTION: self._task_status,
            StatusRequest.ACTION: self._status_action,
            ReportUnreachableRequest.ACTION: self._report_unreachable,
        }
        # Everything a call touches exists before the port opens (a host may be retrying on it).
        self._saver = RecordSaver(group, self._cond, save) if save is not None else None
        self._rounds = RoundRunner(group, self._cond, assigner, clock, self._round_applied)
        probe = functools.partial(probe_host, secret=secret, tls_root_certs=settings.client_root_certs())
        self._prober = UnreachableProber(probe, self._remove_unreachable)
        self._silence = SilenceWatch()
        self._connections = ConnectionWatch(self._wake_held_calls)
        self._ticker = threading.Thread(target=self._tick_loop, name="coordinator-ticker", daemon=True)
        self._ticker.start()
        try:
            super().__init__(f"coordinator of {group.group_id}", host, port, secret=secret, tls=tls,
                             bind_key="coordinator.host")
        except BaseException:
            self._stop_threads()
            raise

    @property
    def lock(self) -> threading.Condition:
        """Hold this to read the group consistently from outside the server."""
        return self._cond

    def calls_in_flight(self, member_id: str) -> int:
        """The member's joins, syncs and heartbeats held here now: a live member has one, or one on its way."""
        with self._cond:
            return self._silence.in_flight(member_id)

    def shutdown(self) -> None:
        """Answer the held syncs and heartbeats now: the server waits for every call to finish."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        super().shutdown()
        self._stop_threads()

    def _stop_threads(self) -> None:
        self._stopping.set()
        self._ticker.join(5)
        self._rounds.close()
        self._connections.close()
        self._prober.close()
        if self._saver is not None:
            self._saver.close()

    def request_rebalance(self, reason: str, change: Callable[[], None] | None = None) -> None:
        """Under the lock: apply `change` (new settings of the assigner, say), then start a round (a
        round being computed is recomputed). `change` may raise GroupErrorException: no round then."""
        with self._cond:
            before = self._observable()
            if change is not None:
                change()
            self._group.request_rebalance(self._clock(), reason)
            self._wake_if_changed(before)

    # ---- Flight ------------------------------------------------------------------------------
    def action_types(self) -> list[tuple[str, str]]:
        return [(name, req.__doc__ or name) for name, (req, _) in REQUESTS.items()]

    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[bytes]:
        kinds = REQUESTS.get(action.type)
        if kinds is None:
            raise flight.FlightServerError(f"unknown action {abbreviate(action.type)}; known: {sorted(REQUESTS)}")
        request_cls, response_cls = kinds
        request: Request | None = None
        response: Response
        try:
            request = self._decode_request(request_cls, action.body)
            with self._member_call(request):
                # Held calls watch their caller's connection (not in _handlers).
                if isinstance(request, HeartbeatRequest):
                    response = self._heartbeat(request, context.is_cancelled)
                elif isinstance(request, SyncRequest):
                    response = self._sync(request, context.is_cancelled)
                else:
                    response = self._handlers[action.type](request)
        except GroupErrorException as e:
            if e.error in FENCING:
                log.info("group %s: %s of member %s refused with %s: %s", self._group.group_id, action.type,
                         getattr(request, "member_id", "?"), e.error.name, shorten(e.message))
            response = response_cls(error=e.error.value, message=shorten(e.message), assignor_error=e.assignor_error)
        except Exception:  # a bug: the log gets the traceback, the client a typed error
            incident = uuid.uuid4().hex[:12]
            log.exception("group %s: %s failed (incident %s)", self._group.group_id, action.type, incident)
            response = response_cls(
                error=GroupError.UNKNOWN_SERVER_ERROR.value,
                message=f"the coordinator failed on this {action.type}; its log says why (incident {incident})",
            )
        return iter([response.to_bytes()])

    @contextlib.contextmanager
    def _member_call(self, request: Request) -> Iterator[None]:
        """A member's join, sync or heartbeat is in flight while this runs: what SilenceWatch counts."""
        member_id = request.member_id if isinstance(request, MEMBER_CALLS) else ""
        if member_id:
            with self._cond:
                self._silence.call_started(member_id)
        try:
            yield
        finally:
            if member_id:
                with self._cond:
                    self._silence.call_ended(member_id, self._clock())

    def _decode_request(self, request_cls: type[Request], body: pa.Buffer) -> Request:
        """The request, within rpc.request.max.bytes (checked before reading it) and for this group."""
        if body.size > self._settings.max_request_bytes:
            raise GroupErrorException(
                GroupError.INVALID_REQUEST,
                f"{request_cls.__name__}: a body of {body.size} bytes is above rpc.request.max.bytes"
                f" ({self._settings.max_request_bytes})",
            )
        request = request_cls.from_bytes(body.to_pybytes())
        group_id = request.group_id
        if group_id != self._group.group_id:
            raise GroupErrorException(
                GroupError.INCONSISTENT_GROUP,
                f"this coordinator serves group {self._group.group_id!r}, not {abbreviate(group_id)}",
            )
        return request

    # ---- handlers ----------------------------------------------------------------------------
    def _join(self, req: JoinRequest) -> JoinResponse:
        check_join(req, self._settings)
        try:
            subscription = self._decode(req.user_data)
        except SubscriptionRejected as e:
            log.warning(
                "group %s: refused join of member %r (instance %r): %s",
                self._group.group_id, req.member_id, req.group_instance_id, e,
            )
            raise GroupErrorException(GroupError.ASSIGNOR_ERROR, str(e), e.assignor_error) from None
        with self._cond:
            before = self._observable()
            member_id = self._group.join(
                capacity=req.capacity,
                generation=req.generation,
                revoked_all=req.revoked_all,
                member_id=req.member_id,
                instance_id=req.group_instance_id,
                protocol=req.rebalance_protocol,
                subscription=subscription,
                session_timeout_ms=req.session_timeout_ms,
                rebalance_timeout_ms=req.rebalance_timeout_ms,
                now_ms=self._clock(),
            )
            self._wake_if_changed(before)
        return JoinResponse(member_id=member_id)

    def _sync(self, req: SyncRequest, caller_gone: Callable[[], bool]) -> SyncResponse:
        """Held up to wait_ms for the member's new assignment. A member killed during a round holds
        a sync, not a heartbeat: a held sync whose connection dropped gets its host probed too."""
        deadline = time.monotonic() + min(max(req.wait_ms, 0), MAX_SYNC_WAIT_MS) / 1000
        with self._connections.held(caller_gone) as dropped, self._cond:
            while True:
                before = self._observable()
                got = self._group.sync(
                    member_id=req.member_id,
                    instance_id=req.group_instance_id,
                    known_generation=req.generation,
                    now_ms=self._clock(),
                )
                if self._observable() != before:  # delivering a failed assignment removes the member
                    self._wake_if_changed(before)
                if got is not None or time.monotonic() >= deadline or self._stopping.is_set():
                    break
                if not self._hold(deadline, dropped):
                    self._probe_member(req.member_id, "its sync's connection dropped")
                    break
        if got is None:
            return SyncResponse(ready=False)
        return SyncResponse(
            ready=True,
            generation=got.generation,
            protocol=got.protocol.name if got.protocol is not None else "",  # None: a failed round's error
            user_data=got.user_data,
            assignor_error=got.assignor_error,
            message=got.message,
            error=GroupError.ASSIGNOR_ERROR.value if got.assignor_error else GroupError.NONE.value,
        )

    def _heartbeat(self, req: HeartbeatRequest, caller_gone: Callable[[], bool]) -> HeartbeatResponse:
        """Long-polls up to wait_ms: every wake-up re-checks the member, so the answer (and the
        session's last contact) is as of the moment it is sent. A member heartbeats nearly all the
        time, so a held heartbeat whose connection dropped (`caller_gone`) is the first sign of a
        killed host: its endpoint is probed at once."""
        deadline = time.monotonic() + min(max(req.wait_ms, 0), MAX_SYNC_WAIT_MS) / 1000
        with self._connections.held(caller_gone) as dropped, self._cond:
            while True:
                self._group.heartbeat(
                    member_id=req.member_id, instance_id=req.group_instance_id, generation=req.generation,
                    now_ms=self._clock(),
                )
                if time.monotonic() >= deadline or self._stopping.is_set():
                    return HeartbeatResponse()
                if not self._hold(deadline, dropped):
                    self._probe_member(req.member_id, "its heartbeat's connection dropped")
                    return HeartbeatResponse()

    def _hold(self, deadline: float, dropped: Callable[[], bool]) -> bool:
        """Under the lock: wait until notified or `deadline` (True); False when the caller's
        connection dropped (the ConnectionWatch wakes every held call when one did)."""
        remaining = deadline - time.monotonic()
        if remaining > 0 and not dropped():
            self._cond.wait(remaining)
        return not dropped()

    def _wake_held_calls(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _leave(self, req: LeaveRequest) -> LeaveResponse:
        with self._cond:
            before = self._observable()
            self._group.leave(member_id=req.member_id, instance_id=req.group_instance_id, now_ms=self._clock())
            self._wake_if_changed(before)
        return LeaveResponse()

    def _describe_action(self, req: DescribeRequest) -> DescribeResponse:
        return DescribeResponse(**self._describe())

    def _status_action(self, req: StatusRequest) -> StatusResponse:
        return StatusResponse(status=self._status())

    def _set_protocol_action(self, req: SetProtocolRequest) -> SetProtocolResponse:
        self._set_protocol(req.rebalance_protocol)
        return SetProtocolResponse()

    def _request_shutdown_action(self, req: RequestShutdownRequest) -> RequestShutdownResponse:
        self._request_shutdown(req.reason or "operator request_shutdown action")
        return RequestShutdownResponse()

    def _drain_member_action(self, req: DrainMemberRequest) -> DrainMemberResponse:
        if self._drain_member is None:
            raise GroupErrorException(GroupError.INVALID_REQUEST, "this coordinator cannot drain members")
        self._drain_member(req.member_id, req.reason or "drain_member action")
        return DrainMemberResponse()

    def _report_tasks(self, req: ReportTasksRequest) -> ReportTasksResponse:
        reports = parse_reports(req.tasks)
        with self._cond:
            self._group.check_generation(member_id=req.member_id, instance_id=None, generation=req.generation)
            self._task_reports.record(req.member_id, req.generation, req.endpoint, reports, req.pid or None)
        return ReportTasksResponse()

    def _task_status(self, req: TaskStatusRequest) -> TaskStatusResponse:
        with self._cond:
            status = self._task_reports.status(self._group)
            generation = self._group.generation
        return TaskStatusResponse(generation=generation, tasks={str(t): s.to_json() for t, s in status.items()})

    def _report_unreachable(self, req: ReportUnreachableRequest) -> ReportUnreachableResponse:
        """Probe the reported endpoint if a member serves it (the coordinator probes no other address)."""
        with self._cond:
            known = bool(self._task_reports.members_at(req.endpoint, self._group))
        log.debug("group %s: a reader following generation %d's plan could not reach %s%s", self._group.group_id,
                  req.generation, abbreviate(req.endpoint), "" if known else "; no member serves it")
        if known:
            self._prober.report(req.endpoint, "reported by a reader")
        return ReportUnreachableResponse(probing=known)

    def _probe_member(self, member_id: str, why: str) -> None:
        """Under the lock: probe the batch endpoint of `member_id`, if it is a dynamic member that
        reported one (a static member is kept until its session timeout anyway: it is expected back)."""
        member = self._group.members.get(member_id)
        endpoint = self._task_reports.endpoints(self._group).get(member_id)
        if member is not None and member.instance_id is None and endpoint:
            self._prober.report(endpoint, why)

    def _remove_unreachable(self, endpoint: str, why: str) -> None:
        """The probe found the host at `endpoint` refusing connections: its member goes now, as if it
        had left, so its tasks move without waiting for its session timeout."""
        with self._cond:
            before = self._observable()
            for member_id in self._task_reports.members_at(endpoint, self._group):
                self._group.remove_unreachable(member_id, self._clock(),
                                               f"its host at {endpoint} refuses connections ({why})")
            self._wake_if_changed(before)

    # ---- clock -------------------------------------------------------------------------------
    def _tick_loop(self) -> None:
        while not self._stopping.wait(self._tick_s):
            with self._cond:
                before = self._observable()
                try:
                    now_ms = self._clock()
                    self._group.tick(now_ms)
                    for member_id in self._silence.silent(self._group.members.keys(), now_ms):
                        self._probe_member(member_id, f"no call from it for {self._silence.after_ms} ms")
                except Exception:  # keep ticking: one bad round must not stop session expiry
                    log.exception("group %s: tick failed", self._group.group_id)
                self._wake_if_changed(before)

    def _round_applied(self) -> None:
        """Under the lock, after the RoundRunner applied a round: a new generation to deliver and save."""
        if self._generation_formed is not None:
            self._generation_formed()
        if self._saver is not None:
            self._saver.notify()
        self._cond.notify_all()

    def _observable(self) -> tuple[int, object, int]:
        """What a waiting `sync` or `heartbeat` can observe: a new generation, a rebalance starting or
        ending, or a removed member. A round moving on to be computed is none of these."""
        state = self._group.state
        if state is GroupState.COMPLETING_REBALANCE:
            state = GroupState.PREPARING_REBALANCE
        return (self._group.generation, state, len(self._group.members))

    def _wake_if_changed(self, before: tuple[int, object, int]) -> None:
        """Wake the waiting syncs only when they may have an answer: a join that merely adds one more
        member to the round must not wake hundreds of waiters (that is quadratic per round)."""
        if self._saver is not None:
            self._saver.notify()
        if self._group.pending_number is not None:
            self._rounds.notify()
        generation, state, members = self._observable()
        if (generation, state) != before[:2] or members < before[2]:
            self._cond.notify_all()
