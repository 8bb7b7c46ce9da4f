"""The member side of the group protocol that a task host embeds: join, wait for the assignment,
heartbeat, and run KIP-429's listener semantics for EAGER and COOPERATIVE members.

One thread runs the protocol and the callbacks, one at a time. A second thread only heartbeats, on
its own connection, so a slow callback (commit, checkpoint, close) does not cost the session; it
reports what the coordinator said and the protocol thread acts on it."""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    LeaveRequest,
    LeaveResponse,
    SyncRequest,
    SyncResponse,
)
from streams_rt.tasks.metrics import ListenerMetrics
from streams_rt.protocol import (
    AssignorError,
    MalformedUserData,
    RebalanceProtocol,
    TaskId,
    VersionMismatch,
    on_assignment_version,
    parse_upgrade_from,
)
from streams_rt.rpc.client import CoordinatorUnavailable, GroupClient

log = logging.getLogger(__name__)


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"  # not in the group (new, or fell out of it): owns nothing
    JOINING = "JOINING"  # join sent, waiting for the round's assignment
    STABLE = "STABLE"  # holds the assignment of the current generation, heartbeating
    FAILED = "FAILED"  # a fatal error (fenced instance id, unreadable user data): stopped
    CLOSED = "CLOSED"


_VALID_TRANSITIONS: Mapping[MemberState, frozenset[MemberState]] = {
    MemberState.UNJOINED: frozenset({MemberState.JOINING, MemberState.FAILED, MemberState.CLOSED}),
    MemberState.JOINING: frozenset(
        {MemberState.JOINING, MemberState.STABLE, MemberState.UNJOINED, MemberState.FAILED, MemberState.CLOSED}
    ),
    MemberState.STABLE: frozenset({MemberState.JOINING, MemberState.UNJOINED, MemberState.FAILED, MemberState.CLOSED}),
    MemberState.FAILED: frozenset({MemberState.CLOSED}),
    MemberState.CLOSED: frozenset(),
}


@dataclass(frozen=True)
class ReceivedAssignment:
    """The parts of a decoded AssignmentInfo the member protocol needs."""

    version: int
    commonly_supported_version: int
    active: frozenset[TaskId]
    standby: frozenset[TaskId]
    error_code: int = 0


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


@dataclass(frozen=True)
class MemberConfig:
    """Kafka's consumer settings that matter to the group protocol."""

    application_id: str  # the group id
    coordinator_address: str
    group_instance_id: str | None = None  # group.instance.id (static membership)
    session_timeout_ms: int = 45_000  # session.timeout.ms
    heartbeat_interval_ms: int = 3_000  # heartbeat.interval.ms
    max_poll_interval_ms: int = 300_000  # max.poll.interval.ms: the rebalance timeout
    upgrade_from: str | None = None  # upgrade.from: keeps the old metadata version and EAGER (2 bounces)
    protocol: RebalanceProtocol | None = None  # None: as upgrade.from says (COOPERATIVE when unset)
    subscription_version: int | None = None  # None: as upgrade.from says (the latest when unset)
    num_stream_threads: int = 1  # num.stream.threads: the capacity the assignor balances by

    def effective(self) -> tuple[RebalanceProtocol, int]:
        """The protocol and first subscription version this member uses (raises UpgradeFromError)."""
        mode = parse_upgrade_from(self.upgrade_from)
        protocol = self.protocol or mode.protocol
        return protocol, self.subscription_version or mode.metadata_version


class MemberFailed(Exception):
    """The member stopped for a reason that retrying would not fix."""

    def __init__(self, error: GroupError, message: str, assignor_error: int = 0) -> None:
        super().__init__(f"{error.value}: {message}")
        self.error, self.assignor_error = error, assignor_error


class AssignmentErrorReceived(MemberFailed):
    """The group leader answered with INCOMPLETE_SOURCE_TOPIC_METADATA or ASSIGNMENT_ERROR (Kafka's
    MissingSourceTopicException / TaskAssignmentException): the assignment is not applied."""

    def __init__(self, code: AssignorError) -> None:
        super().__init__(GroupError.ASSIGNOR_ERROR, f"the coordinator answered {code.name} ({int(code)})", int(code))
        self.code = code


class GroupMember:
    def __init__(self, config: MemberConfig, codec: MemberCodec, listener: TaskListener) -> None:
        self.config = config
        self._codec = codec
        self._listener = listener
        self._client = GroupClient(config.coordinator_address)
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.active: frozenset[TaskId] = frozenset()
        self.standby: frozenset[TaskId] = frozenset()
        # EAGER: what the member revoked before joining, still reported so the assignor stays sticky.
        self.revoked_before_join: frozenset[TaskId] = frozenset()
        self.protocol, self.used_version = config.effective()
        # The protocol the coordinator ran the last round with: it may make a COOPERATIVE member
        # behave EAGER (upgrade.from on the driver, or the operator's toggle), never the reverse.
        self.round_protocol = self.protocol
        self.used_version = min(self.used_version, codec.latest_supported_version)
        self.assignment_version = -1  # the version of the last AssignmentInfo received
        self.failure: MemberFailed | None = None
        # The coordinator asked the application to shut down (KIP-725): the member revoked, left and
        # is CLOSED; its host should stop.
        self.shutdown_requested = False
        self.listener_metrics = ListenerMetrics()
        self._last_contact = time.monotonic()
        self._closing = threading.Event()
        self._hb_client = GroupClient(config.coordinator_address)
        self._hb_news: tuple[str, HeartbeatResponse | None, int] | None = None  # (kind, response, generation)
        self._hb_posted = threading.Event()
        self._in_callback = False
        self._hb_thread = threading.Thread(target=self._heartbeat_loop, name=f"group-heartbeat-{config.group_instance_id}", daemon=True)
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"group-member-{config.group_instance_id}", daemon=True)

    # ---- life cycle --------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()
        self._hb_thread.start()

    def close(self, *, leave: bool | None = None, timeout_s: float = 10.0) -> None:
        """Stop the protocol thread. A dynamic member leaves the group so it rebalances at once; a
        static member stays (KIP-345): it may come back within the session timeout."""
        self._closing.set()
        for thread in (self._thread, self._hb_thread):
            if thread.is_alive():
                thread.join(timeout_s)
        if self.active:
            self._callback("revoked", self.active)  # KIP-429: a clean close revokes what it holds
            self.active = frozenset()
        if leave is None:
            leave = self.config.group_instance_id is None
        if leave and self.member_id:
            try:
                self._client.call(self._leave_request(), LeaveResponse).raise_for_error()
                log.info("member %s left the group", self.member_id)
            except Exception as e:  # leaving is best effort: the session timeout does the rest
                log.info("member %s could not leave cleanly: %s", self.member_id, e)
        self._set_state(MemberState.CLOSED)
        self._client.close()
        self._hb_client.close()

    def wait_for(self, predicate, timeout_s: float) -> bool:  # type: ignore[no-untyped-def]
        """Block until predicate(self) holds (re-checked after every state change)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True

    def _set_state(self, to: MemberState) -> None:
        if to is not self.state and to not in _VALID_TRANSITIONS[self.state]:
            raise AssertionError(f"invalid member transition {self.state.value} -> {to.value}")
        with self._changed:
            self.state = to
            self._changed.notify_all()

    # ---- protocol loop -----------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._closing.is_set():
                if self.state is MemberState.STABLE:
                    self._act_on_heartbeat()
                else:
                    self._join_round()
        except MemberFailed as e:
            self.failure = e
            log.error("member %s (instance %s) stopped: %s", self.member_id, self.config.group_instance_id, e)
            self._lose_all()  # a stopped member must not keep processing: another may own its tasks now
            self._set_state(MemberState.FAILED)
        except Exception as e:  # a bug must stop the member visibly, not leave it silently half-joined
            log.exception("member %s (instance %s) stopped on an unexpected error", self.member_id,
                          self.config.group_instance_id)
            self.failure = MemberFailed(GroupError.INVALID_REQUEST, f"unexpected error: {e!r}")
            self._lose_all()
            self._set_state(MemberState.FAILED)

    @property
    def behaves_eager(self) -> bool:
        return RebalanceProtocol.EAGER in (self.protocol, self.round_protocol)

    def _join_round(self) -> None:
        eager = self.behaves_eager
        if eager and self.active:
            # EAGER: give up everything before joining, so the leader may move any task at once.
            # Like Kafka's EAGER members, still report them (as running active) for stickiness.
            self.revoked_before_join = self.active
            self._callback("revoked", self.active)
            self.active = frozenset()
        reported = self.revoked_before_join if eager else self.active
        request = JoinRequest(
            group_id=self.config.application_id,
            member_id=self.member_id,
            protocol=self.protocol.name,
            revoked_all=eager,
            user_data=self._codec.encode_subscription(self.used_version, reported, self.standby),
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.max_poll_interval_ms,
            group_instance_id=self.config.group_instance_id,
            capacity=self.config.num_stream_threads,
            generation=self.generation,
        )
        resp = self._call(request, JoinResponse)
        if resp is None or not self._handle_error(resp):
            return
        self.member_id = resp.member_id
        self._set_state(MemberState.JOINING)
        while not self._closing.is_set():
            sync = self._call(
                SyncRequest(
                    group_id=self.config.application_id,
                    member_id=self.member_id,
                    generation=self.generation,
                    wait_ms=min(500, self.config.session_timeout_ms // 3),
                    group_instance_id=self.config.group_instance_id,
                ),
                SyncResponse,
                extra_timeout_s=0.5,
            )
            if sync is None:
                return
            if not self._handle_error(sync):
                return
            if sync.ready:
                self._on_assignment(sync)
                return

    def _on_assignment(self, sync: SyncResponse) -> None:
        """KIP-429, member step 3: revoke what moved (then rejoin), always call assigned."""
        try:
            got = self._codec.decode_assignment(sync.user_data)
        except MalformedUserData as e:
            raise MemberFailed(GroupError.ASSIGNOR_ERROR, f"cannot read the assignment: {e}") from None
        code = AssignorError(got.error_code)
        if code is AssignorError.SHUTDOWN_REQUESTED:
            self._shut_down_on_request(sync.generation)
            return
        if code in (AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA, AssignorError.ASSIGNMENT_ERROR):
            raise AssignmentErrorReceived(code)  # nothing applied; _run gives up what it holds
        # VERSION_PROBING: apply the assignment and rejoin (the versions below say how).
        rejoin = code is AssignorError.VERSION_PROBING
        revoked = self.active - got.active
        added = got.active - self.active
        self.generation = sync.generation
        self.revoked_before_join = frozenset()
        if revoked:
            self._callback("revoked", revoked)
            rejoin = True
        self.active, self.standby = got.active, got.standby
        self.assignment_version = got.version
        round_protocol = RebalanceProtocol[sync.protocol]  # checked against PROTOCOLS on decode
        if round_protocol is not self.round_protocol:
            log.info("member %s: the group now runs %s", self.member_id, round_protocol.name)
            self.round_protocol = round_protocol
        try:
            decision = on_assignment_version(
                self.used_version, got.version, got.commonly_supported_version, self._codec.latest_supported_version
            )
        except VersionMismatch as e:
            raise MemberFailed(GroupError.ASSIGNOR_ERROR, str(e)) from None
        if decision.rejoin:
            log.info(
                "member %s: %s subscription version %d -> %d (assignment version %d, commonly supported %d)",
                self.member_id, decision.action.value, self.used_version, decision.next_version,
                got.version, got.commonly_supported_version,
            )
            self.used_version = decision.next_version
            rejoin = True
        self._callback("assigned", added)
        self._set_state(MemberState.JOINING if rejoin else MemberState.STABLE)

    def _shut_down_on_request(self, generation: int) -> None:
        """SHUTDOWN_REQUESTED: revoke everything cleanly, leave the group, stop, tell the host."""
        log.warning("member %s: the coordinator requested an application shutdown; revoking and leaving", self.member_id)
        self.generation = generation
        if self.active:
            self._callback("revoked", self.active)
        self.active, self.standby, self.revoked_before_join = frozenset(), frozenset(), frozenset()
        try:
            self._client.call(self._leave_request(), LeaveResponse).raise_for_error()
        except Exception as e:  # best effort: the session timeout does the rest
            log.info("member %s could not leave cleanly: %s", self.member_id, e)
        self.member_id = ""
        self.shutdown_requested = True
        self._closing.set()
        self._set_state(MemberState.CLOSED)

    def _heartbeat_loop(self) -> None:
        """Heartbeat while STABLE or while a callback runs; post anything but success. The
        coordinator holds each heartbeat for up to the interval and answers at once when a
        rebalance starts, so a member learns of a round without waiting out an interval. At most
        one heartbeat per interval; after news, wait for the protocol thread to act on it."""
        interval_s = self.config.heartbeat_interval_ms / 1000
        while not self._closing.is_set():
            member_id, generation = self.member_id, self.generation
            if not (member_id and generation >= 0 and (self.state is MemberState.STABLE or self._in_callback)):
                self._wait_for_change(interval_s)
                continue
            started = time.monotonic()
            if self._heartbeat_once(member_id, generation):
                self._closing.wait(max(0.0, interval_s - (time.monotonic() - started)))
            else:
                self._wait_for_change(interval_s)

    def _wait_for_change(self, timeout_s: float) -> None:
        with self._changed:
            self._changed.wait(timeout_s)

    def _heartbeat_once(self, member_id: str, generation: int) -> bool:
        """One long-poll heartbeat; False when it brought news (posted) or failed."""
        request = HeartbeatRequest(
            group_id=self.config.application_id, member_id=member_id, generation=generation,
            group_instance_id=self.config.group_instance_id, wait_ms=self.config.heartbeat_interval_ms,
        )
        try:
            resp = self._hb_client.call(request, HeartbeatResponse, extra_timeout_s=request.wait_ms / 1000)
        except CoordinatorUnavailable as e:
            silent_s = time.monotonic() - self._last_contact
            if silent_s * 1000 > self.config.session_timeout_ms:
                log.warning("member %s: no contact with the coordinator for %.1f s: %s", member_id, silent_s, e)
                self._post(("silent", None, generation))
            return False
        self._last_contact = time.monotonic()
        if resp.error != GroupError.NONE.value:
            self._post(("error", resp, generation))
            return False
        return True

    def _post(self, news: tuple[str, HeartbeatResponse | None, int]) -> None:
        self._hb_news = news
        self._hb_posted.set()

    def _act_on_heartbeat(self) -> None:
        """Protocol thread, STABLE: wait for the heartbeat thread's news about this generation."""
        if not self._hb_posted.wait(self.config.heartbeat_interval_ms / 1000):
            return
        self._hb_posted.clear()
        news, self._hb_news = self._hb_news, None
        if news is None or news[2] != self.generation or self.state is not MemberState.STABLE:
            return  # about an older generation: already dealt with
        kind, resp, _ = news
        if kind == "silent":
            if self.active:
                self._lose_all()
        elif resp is not None:
            self._handle_error(resp)

    def _handle_error(self, resp: JoinResponse | SyncResponse | HeartbeatResponse) -> bool:
        """True when the response carries no error; otherwise moves the member on and returns False."""
        error = GroupError(resp.error)
        if error is GroupError.NONE:
            return True
        if error is GroupError.REBALANCE_IN_PROGRESS:
            log.info("member %s: rejoining: %s", self.member_id, resp.message)
            self._set_state(MemberState.JOINING)
        elif error in (GroupError.ILLEGAL_GENERATION, GroupError.UNKNOWN_MEMBER_ID):
            # Fell out of the group: another member may already own these tasks.
            log.warning("member %s: lost its tasks: %s", self.member_id, resp.message)
            self._lose_all()
            if error is GroupError.UNKNOWN_MEMBER_ID:
                self.member_id = ""
        else:
            raise MemberFailed(error, resp.message, resp.assignor_error)
        return False

    def _lose_all(self) -> None:
        if self.active:
            self._callback("lost", self.active)
        self.active, self.standby, self.generation = frozenset(), frozenset(), -1
        self.revoked_before_join = frozenset()  # lost: another member may run them by now
        self._set_state(MemberState.UNJOINED)

    def _call(self, request, response_cls, *, extra_timeout_s: float = 0.0):  # type: ignore[no-untyped-def]
        """One RPC; None (after a short back-off) when the coordinator cannot be reached. A member
        that cannot heartbeat for a whole session assumes it was removed and gives up its tasks."""
        try:
            resp = self._client.call(request, response_cls, extra_timeout_s=extra_timeout_s)
            self._last_contact = time.monotonic()
            return resp
        except CoordinatorUnavailable as e:
            silent_s = time.monotonic() - self._last_contact
            if silent_s * 1000 > self.config.session_timeout_ms and self.active:
                log.warning("member %s: no contact with the coordinator for %.1f s: %s", self.member_id, silent_s, e)
                self._lose_all()
            self._closing.wait(min(1.0, self.config.heartbeat_interval_ms / 1000))
            return None

    def _callback(self, kind: str, tasks: frozenset[TaskId]) -> None:
        """Run one listener callback and time it; an exception is logged, the assignment stands."""
        fn = getattr(self._listener, f"on_tasks_{kind}")
        started = time.perf_counter()
        self._in_callback = True
        try:
            fn(tasks, self.generation)
        except Exception:
            log.exception("member %s: on_tasks_%s(%s) failed", self.member_id, kind, sorted(map(str, tasks)))
        finally:
            self._in_callback = False
            self.listener_metrics.sensors[kind].record((time.perf_counter() - started) * 1000)

    def _leave_request(self) -> LeaveRequest:
        return LeaveRequest(
            group_id=self.config.application_id, member_id=self.member_id,
            group_instance_id=self.config.group_instance_id,
        )
