"""The coordinator's Arrow Flight endpoint: decodes each action against its schema, applies it to
the pure `Group` under one lock, and drives the group's clock from a ticker thread."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow.flight as flight

from streams_rt.rpc.errors import GroupError, GroupErrorException
from streams_rt.coordinator.errors import SubscriptionRejected
from streams_rt.coordinator.group import Group
from streams_rt.coordinator.group_record import GroupRecord
from streams_rt.coordinator.saver import RecordSaver
from streams_rt.rpc.messages import (
    REQUESTS,
    DescribeRequest,
    DescribeResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    LeaveRequest,
    LeaveResponse,
    Message,
    ReportTasksRequest,
    ReportTasksResponse,
    RequestShutdownRequest,
    RequestShutdownResponse,
    Response,
    SetProtocolRequest,
    SetProtocolResponse,
    SyncRequest,
    SyncResponse,
    TaskStatusRequest,
    TaskStatusResponse,
)
from streams_rt.coordinator.task_reports import TaskReports
from streams_rt.rpc.tasks import parse_reports

log = logging.getLogger(__name__)

MAX_SYNC_WAIT_MS = 5_000


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class CoordinatorServer(flight.FlightServerBase):
    def __init__(
        self,
        group: Group,
        *,
        decode_subscription: Callable[[bytes], Any],
        describe: Callable[[], dict[str, Any]],
        set_protocol: Callable[[str], None],
        request_shutdown: Callable[[str], None],
        save: Callable[[GroupRecord], None] | None = None,
        task_reports: TaskReports | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        tick_interval_ms: int = 50,
        clock: Callable[[], int] = monotonic_ms,
    ) -> None:
        super().__init__(f"grpc://{host}:{port}")
        self.host = host
        self._group = group
        self._decode = decode_subscription
        self._describe = describe
        self._set_protocol = set_protocol
        self._request_shutdown = request_shutdown
        self._task_reports = task_reports or TaskReports({})
        self._clock = clock
        self._cond = threading.Condition()
        self._saver = RecordSaver(group, self._cond, save) if save is not None else None
        self._stopping = threading.Event()
        self._tick_s = tick_interval_ms / 1000
        self._ticker = threading.Thread(target=self._tick_loop, name="coordinator-ticker", daemon=True)
        self._ticker.start()
        self._handlers: dict[str, Callable[[Any], Response]] = {
            JoinRequest.ACTION: self._join,
            SyncRequest.ACTION: self._sync,
            HeartbeatRequest.ACTION: self._heartbeat,
            LeaveRequest.ACTION: self._leave,
            DescribeRequest.ACTION: self._describe_action,
            SetProtocolRequest.ACTION: self._set_protocol_action,
            RequestShutdownRequest.ACTION: self._request_shutdown_action,
            ReportTasksRequest.ACTION: self._report_tasks,
            TaskStatusRequest.ACTION: self._task_status,
        }

    @property
    def address(self) -> str:
        return f"grpc://{self.host}:{self.port}"

    @property
    def lock(self) -> threading.Condition:
        """Hold this to read the group consistently from outside the server."""
        return self._cond

    def shutdown(self) -> None:
        """Answer the held syncs and heartbeats now: the server waits for every call to finish."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        super().shutdown()
        if self._saver is not None:
            self._saver.close()

    # ---- Flight ------------------------------------------------------------------------------
    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:
        return [(name, req.__doc__ or name) for name, (req, _) in REQUESTS.items()]

    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[bytes]:
        kinds = REQUESTS.get(action.type)
        if kinds is None:
            raise flight.FlightServerError(f"unknown action {action.type!r}; known: {sorted(REQUESTS)}")
        request_cls, response_cls = kinds
        try:
            request: Message = request_cls.from_bytes(action.body.to_pybytes())
            if getattr(request, "group_id") != self._group.group_id:
                raise GroupErrorException(
                    GroupError.INCONSISTENT_GROUP,
                    f"this coordinator serves group {self._group.group_id!r}, not {getattr(request, 'group_id')!r}",
                )
            response = self._handlers[action.type](request)
        except GroupErrorException as e:
            response = response_cls(error=e.error.value, message=e.message, assignor_error=e.assignor_error)
        return iter([response.to_bytes()])

    # ---- handlers ----------------------------------------------------------------------------
    def _join(self, req: JoinRequest) -> JoinResponse:
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
                protocol=req.protocol,
                subscription=subscription,
                session_timeout_ms=req.session_timeout_ms,
                rebalance_timeout_ms=req.rebalance_timeout_ms,
                now_ms=self._clock(),
            )
            self._wake_if_changed(before)
        return JoinResponse(member_id=member_id)

    def _sync(self, req: SyncRequest) -> SyncResponse:
        deadline = time.monotonic() + min(max(req.wait_ms, 0), MAX_SYNC_WAIT_MS) / 1000
        with self._cond:
            while True:
                got = self._group.sync(
                    member_id=req.member_id,
                    instance_id=req.group_instance_id,
                    known_generation=req.generation,
                    now_ms=self._clock(),
                )
                remaining = deadline - time.monotonic()
                if got is not None or remaining <= 0 or self._stopping.is_set():
                    break
                self._cond.wait(remaining)
        if got is None:
            return SyncResponse(ready=False)
        return SyncResponse(
            ready=True,
            generation=got.generation,
            protocol=got.protocol,
            user_data=got.user_data,
            assignor_error=got.assignor_error,
            message=got.message,
            error=GroupError.ASSIGNOR_ERROR.value if got.assignor_error else GroupError.NONE.value,
        )

    def _heartbeat(self, req: HeartbeatRequest) -> HeartbeatResponse:
        """Long-polls up to wait_ms: every wake-up re-checks the member, so the answer (and the
        session's last contact) is as of the moment it is sent."""
        deadline = time.monotonic() + min(max(req.wait_ms, 0), MAX_SYNC_WAIT_MS) / 1000
        with self._cond:
            while True:
                self._group.heartbeat(
                    member_id=req.member_id, instance_id=req.group_instance_id, generation=req.generation,
                    now_ms=self._clock(),
                )
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping.is_set():
                    return HeartbeatResponse()
                self._cond.wait(remaining)

    def _leave(self, req: LeaveRequest) -> LeaveResponse:
        with self._cond:
            before = self._observable()
            self._group.leave(member_id=req.member_id, instance_id=req.group_instance_id, now_ms=self._clock())
            self._wake_if_changed(before)
        return LeaveResponse()

    def _describe_action(self, req: DescribeRequest) -> DescribeResponse:
        return DescribeResponse(**self._describe())

    def _set_protocol_action(self, req: SetProtocolRequest) -> SetProtocolResponse:
        self._set_protocol(req.protocol)
        return SetProtocolResponse()

    def _request_shutdown_action(self, req: RequestShutdownRequest) -> RequestShutdownResponse:
        self._request_shutdown(req.reason or "operator request_shutdown action")
        return RequestShutdownResponse()

    def _report_tasks(self, req: ReportTasksRequest) -> ReportTasksResponse:
        reports = parse_reports(req.tasks)
        with self._cond:
            self._group.check_generation(member_id=req.member_id, instance_id=None, generation=req.generation)
            self._task_reports.record(req.member_id, req.generation, req.endpoint, reports)
        return ReportTasksResponse()

    def _task_status(self, req: TaskStatusRequest) -> TaskStatusResponse:
        with self._cond:
            status = self._task_reports.status(self._group)
            generation = self._group.generation
        return TaskStatusResponse(generation=generation, tasks={str(t): s.to_json() for t, s in status.items()})

    # ---- clock -------------------------------------------------------------------------------
    def _tick_loop(self) -> None:
        while not self._stopping.wait(self._tick_s):
            with self._cond:
                before = self._observable()
                try:
                    self._group.tick(self._clock())
                except Exception:  # keep ticking: one bad round must not stop session expiry
                    log.exception("group %s: tick failed", self._group.group_id)
                self._wake_if_changed(before)

    def _observable(self) -> tuple[int, object, int]:
        """What a waiting `sync` can observe: a new generation, a state change, or a removed member."""
        return (self._group.generation, self._group.state, len(self._group.members))

    def _wake_if_changed(self, before: tuple[int, object, int]) -> None:
        """Wake the waiting syncs only when they may have an answer: a join that merely adds one more
        member to the round must not wake hundreds of waiters (that is quadratic per round)."""
        if self._saver is not None:
            self._saver.notify()
        generation, state, members = self._observable()
        if (generation, state) != before[:2] or members < before[2]:
            self._cond.notify_all()
