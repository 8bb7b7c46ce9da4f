"""The member side of the group protocol as a pure state machine (Kafka's `MemberState` and
`AbstractMembershipManager`): events in, actions out, the time passed in. No threads, no RPC, no
clock: `GroupMember` (group_member.py) is the thin driver that sends what this asks for, runs the
listener callbacks it returns and feeds the answers back.

KIP-429's listener rules live here: under COOPERATIVE only the tasks that moved away are revoked,
then the member rejoins for the follow-up round; under EAGER everything is revoked before each join
(still reported, so the assignor stays sticky); `assigned` runs every round; `lost` runs when the
member fell out of the group or was silent for a whole session."""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from streams_rt.config import StreamsConfig
from streams_rt.config.registry import (
    APPLICATION_ID,
    GROUP_INSTANCE_ID,
    HEARTBEAT_INTERVAL_MS,
    MAX_POLL_INTERVAL_MS,
    NUM_STREAM_THREADS,
    SESSION_TIMEOUT_MS,
    UPGRADE_FROM,
)
from streams_rt.protocol import (
    AssignorError,
    MalformedUserData,
    RebalanceProtocol,
    TaskId,
    VersionMismatch,
    on_assignment_version,
    parse_upgrade_from,
)
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import HeartbeatResponse, JoinResponse, SyncResponse

log = logging.getLogger(__name__)

NO_TASKS: frozenset[TaskId] = frozenset()


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"  # not in the group (new, or fell out of it): holds nothing, must join
    REJOINING = "REJOINING"  # holds its assignment but must join the next round
    JOINING = "JOINING"  # a join is in flight
    SYNCING = "SYNCING"  # joined the round, waiting for its assignment
    RECONCILING = "RECONCILING"  # got the assignment; the listener's callbacks are running
    STABLE = "STABLE"  # holds the assignment of the current generation, heartbeating
    FAILED = "FAILED"  # a fatal error (fenced instance id, unreadable assignment): stopped
    CLOSED = "CLOSED"


_S = MemberState
TRANSITIONS: Mapping[MemberState, frozenset[MemberState]] = {
    _S.UNJOINED: frozenset({_S.JOINING, _S.FAILED, _S.CLOSED}),
    _S.REJOINING: frozenset({_S.JOINING, _S.UNJOINED, _S.FAILED, _S.CLOSED}),
    _S.JOINING: frozenset({_S.SYNCING, _S.REJOINING, _S.UNJOINED, _S.FAILED, _S.CLOSED}),
    _S.SYNCING: frozenset({_S.RECONCILING, _S.REJOINING, _S.UNJOINED, _S.FAILED, _S.CLOSED}),
    _S.RECONCILING: frozenset({_S.STABLE, _S.REJOINING, _S.UNJOINED, _S.FAILED, _S.CLOSED}),
    _S.STABLE: frozenset({_S.REJOINING, _S.UNJOINED, _S.FAILED, _S.CLOSED}),
    _S.FAILED: frozenset({_S.CLOSED}),
    _S.CLOSED: frozenset(),
}


class InvalidTransition(RuntimeError):
    """A bug: the state machine was asked to move along an edge its table does not have."""


# ---- configuration and decoded input -------------------------------------------------------------
@dataclass(frozen=True)
class MemberConfig:
    """Kafka's consumer settings that matter to the group protocol, each field the key of the same
    name (`session_timeout_ms`: `session.timeout.ms`), read by `from_config`. Not properties:
    `coordinator_address` (the driver's coordinator, handed to each host), `resume_version` (from a
    restart's host file), and `protocol` and `subscription_version`, test overrides of what
    `upgrade.from` implies."""

    application_id: str  # the group id
    coordinator_address: str
    group_instance_id: str | None = None  # static membership
    session_timeout_ms: int = SESSION_TIMEOUT_MS.default_value()
    heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS.default_value()
    max_poll_interval_ms: int = MAX_POLL_INTERVAL_MS.default_value()  # the rebalance timeout
    upgrade_from: str | None = None  # keeps the old metadata version and EAGER (2 bounces)
    protocol: RebalanceProtocol | None = None  # None: as upgrade.from says (COOPERATIVE when unset)
    subscription_version: int | None = None  # None: as upgrade.from says (the latest when unset)
    # The version the process this host replaces spoke (a restart in place): the member starts there,
    # never above what upgrade.from and its release allow, so a bounce needs no version-probing round.
    resume_version: int | None = None
    num_stream_threads: int = NUM_STREAM_THREADS.default_value()  # the capacity the assignor balances by

    @classmethod
    def from_config(cls, config: StreamsConfig, coordinator_address: str) -> MemberConfig:
        """This host's member settings, from the application's resolved configuration."""
        return cls(
            application_id=config.get(APPLICATION_ID),
            coordinator_address=coordinator_address,
            group_instance_id=config.get(GROUP_INSTANCE_ID),
            session_timeout_ms=config.get(SESSION_TIMEOUT_MS),
            heartbeat_interval_ms=config.get(HEARTBEAT_INTERVAL_MS),
            max_poll_interval_ms=config.get(MAX_POLL_INTERVAL_MS),
            upgrade_from=config.get(UPGRADE_FROM),
            num_stream_threads=config.get(NUM_STREAM_THREADS),
        )

    def effective(self) -> tuple[RebalanceProtocol, int]:
        """The protocol and first subscription version this member uses (raises UpgradeFromError)."""
        mode = parse_upgrade_from(self.upgrade_from)
        protocol = self.protocol or mode.protocol
        return protocol, self.subscription_version or mode.metadata_version


@dataclass(frozen=True)
class ReceivedAssignment:
    """The parts of a decoded AssignmentInfo the member protocol needs."""

    version: int
    commonly_supported_version: int
    active: frozenset[TaskId]
    standby: frozenset[TaskId]
    error_code: int = 0


AssignmentDecoder = Callable[[bytes], ReceivedAssignment]


# ---- why a member stops ----------------------------------------------------------------------------
class MemberFailed(Exception):
    """The member stopped for a reason that retrying would not fix."""


class GroupRefused(MemberFailed):
    """The coordinator answered with a fatal group error (e.g. FENCED_INSTANCE_ID)."""

    def __init__(self, error: GroupError, message: str, assignor_error: int = 0) -> None:
        super().__init__(f"{error.value}: {message}")
        self.error, self.assignor_error = error, assignor_error


class AssignmentErrorReceived(GroupRefused):
    """The group leader answered with INCOMPLETE_SOURCE_TOPIC_METADATA or ASSIGNMENT_ERROR (Kafka's
    MissingSourceTopicException / TaskAssignmentException): the assignment is not applied."""

    def __init__(self, code: AssignorError) -> None:
        super().__init__(GroupError.ASSIGNOR_ERROR, f"the coordinator answered {code.name} ({int(code)})", int(code))
        self.code = code


class UnreadableAssignment(MemberFailed):
    """The assignment's bytes cannot be decoded, or carry versions this member cannot have asked for."""


class NotAuthenticated(MemberFailed):
    """The coordinator refused the member's calls: they do not carry this application's secret."""


class MemberCrashed(MemberFailed):
    """A bug in the member's driver: it stopped visibly instead of staying half-joined."""


# ---- events ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JoinAnswered:
    response: JoinResponse


@dataclass(frozen=True)
class SyncAnswered:
    response: SyncResponse


@dataclass(frozen=True)
class HeartbeatAnswered:
    response: HeartbeatResponse
    generation: int  # the generation the heartbeat was sent for


@dataclass(frozen=True)
class CoordinatorUnreachable:
    """An RPC failed (the coordinator is down or unreachable)."""

    reason: str


@dataclass(frozen=True)
class HeartbeatFailed:
    """A heartbeat could not be sent: counts toward the session only, the member keeps going."""

    reason: str
    generation: int


@dataclass(frozen=True)
class AuthenticationFailed:
    """The coordinator refused a call for want of the application's secret: retrying cannot help."""

    reason: str


@dataclass(frozen=True)
class Crashed:
    """The driver hit a bug; the member stops, giving up what it holds."""

    error: BaseException


@dataclass(frozen=True)
class ReconciliationCompleted:
    """The callbacks of the last assignment have run (the driver says so when it reaches the
    CompleteReconciliation action)."""


@dataclass(frozen=True)
class CloseRequested:
    leave: bool  # send a leave request (dynamic members); static members just go quiet


Event = (
    JoinAnswered | SyncAnswered | HeartbeatAnswered | HeartbeatFailed | CoordinatorUnreachable | Crashed
    | AuthenticationFailed | ReconciliationCompleted | CloseRequested
)


# ---- actions -----------------------------------------------------------------------------------
class CallbackKind(enum.Enum):
    REVOKED = "revoked"
    ASSIGNED = "assigned"
    LOST = "lost"


@dataclass(frozen=True)
class RunCallback:
    """Call the task listener; its exceptions are the driver's to log, the assignment stands."""

    kind: CallbackKind
    tasks: frozenset[TaskId]
    generation: int


@dataclass(frozen=True)
class SendJoin:
    """Join (or rejoin) the group. The driver encodes the subscription (it reads local state) from
    the tasks given here and sends the join; the answer comes back as JoinAnswered."""

    member_id: str
    generation: int
    protocol: RebalanceProtocol
    revoked_all: bool
    subscription_version: int
    reported_active: frozenset[TaskId]
    standby: frozenset[TaskId]


@dataclass(frozen=True)
class SendSync:
    member_id: str
    generation: int
    wait_ms: int


@dataclass(frozen=True)
class SendLeave:
    """Leave the group, best effort: its answer does not matter (the session timeout does the rest)."""

    member_id: str


@dataclass(frozen=True)
class CompleteReconciliation:
    """Feed ReconciliationCompleted back: every callback before this one has run."""


@dataclass(frozen=True)
class Backoff:
    """Wait this long before the next request: the coordinator could not be reached."""

    ms: int


Action = RunCallback | SendJoin | SendSync | SendLeave | CompleteReconciliation | Backoff

# How long the coordinator may hold a sync (it answers at once when the round is applied, as Kafka's
# broker holds a SyncGroup). Short waits made every member of a long round sync again and again:
# with 1,000 members and 500 ms, 2,000 syncs a second, which made the round longer still.
MAX_SYNC_WAIT_MS = 5_000
MAX_BACKOFF_MS = 1_000


class Membership:
    """One member's protocol state. Call `poll` for the next request to send, `handle` with every
    answer or failure; both return the actions to carry out, in order."""

    def __init__(self, config: MemberConfig, decode: AssignmentDecoder, latest_supported_version: int,
                 now_ms: int) -> None:
        self.config = config
        self._decode = decode
        self.latest_supported_version = latest_supported_version
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.active: frozenset[TaskId] = NO_TASKS
        self.standby: frozenset[TaskId] = NO_TASKS
        # EAGER: what the member revoked before joining, still reported so the assignor stays sticky.
        self.revoked_before_join: frozenset[TaskId] = NO_TASKS
        self.protocol, version = config.effective()
        self.used_version = min(version, latest_supported_version, config.resume_version or version)
        # The protocol the coordinator ran the last round with: it may make a COOPERATIVE member
        # behave EAGER (upgrade.from on the driver, or the operator's toggle), never the reverse.
        self.round_protocol = self.protocol
        self.assignment_version = -1  # the version of the last AssignmentInfo received
        self.failure: MemberFailed | None = None
        # The coordinator asked the application to shut down (KIP-725): the member revoked, left and
        # is CLOSED; its host should stop.
        self.shutdown_requested = False
        self.last_contact_ms = now_ms
        self._after_reconciling = MemberState.STABLE  # where RECONCILING goes once the callbacks ran

    # ---- queries -------------------------------------------------------------------------------
    @property
    def behaves_eager(self) -> bool:
        return RebalanceProtocol.EAGER in (self.protocol, self.round_protocol)

    @property
    def stopped(self) -> bool:
        return self.state in (MemberState.FAILED, MemberState.CLOSED)

    def heartbeat_due(self, callback_running: bool) -> tuple[str, int] | None:
        """(member id, generation) to heartbeat for, or None. A member heartbeats while it holds an
        assignment, and while any callback runs (a slow revoke must not cost the session)."""
        if not self.member_id or self.generation < 0 or self.stopped:
            return None
        if self.state in (MemberState.STABLE, MemberState.RECONCILING) or callback_running:
            return self.member_id, self.generation
        return None

    # ---- the next request --------------------------------------------------------------------
    def poll(self) -> list[Action]:
        """What to send next: a join when the member must (re)join, a sync while it waits for the
        round; nothing while STABLE (heartbeats carry its news) or in flight."""
        if self.state in (MemberState.UNJOINED, MemberState.REJOINING):
            return self._join()
        if self.state is MemberState.SYNCING:
            wait_ms = min(MAX_SYNC_WAIT_MS, self.config.session_timeout_ms // 3)
            return [SendSync(self.member_id, self.generation, wait_ms)]
        return []

    def _join(self) -> list[Action]:
        actions: list[Action] = []
        eager = self.behaves_eager
        if eager and self.active:
            # EAGER: give up everything before joining, so the leader may move any task at once.
            # Like Kafka's EAGER members, still report them (as running active) for stickiness.
            self.revoked_before_join = self.active
            actions.append(RunCallback(CallbackKind.REVOKED, self.active, self.generation))
            self.active = NO_TASKS
        self._move(MemberState.JOINING)
        actions.append(SendJoin(
            member_id=self.member_id,
            generation=self.generation,
            protocol=self.protocol,
            revoked_all=eager,
            subscription_version=self.used_version,
            reported_active=self.revoked_before_join if eager else self.active,
            standby=self.standby,
        ))
        return actions

    # ---- events --------------------------------------------------------------------------------
    def handle(self, event: Event, now_ms: int) -> list[Action]:
        if isinstance(event, CloseRequested):
            return self._close(event.leave)
        if self.stopped:
            return []  # answers that arrive after the member stopped change nothing
        if isinstance(event, Crashed):
            return self._fail(MemberCrashed(f"unexpected error: {event.error!r}"))
        if isinstance(event, AuthenticationFailed):
            return self._fail(NotAuthenticated(event.reason))
        if isinstance(event, CoordinatorUnreachable):
            return self._on_unreachable(event.reason, now_ms)
        if isinstance(event, HeartbeatFailed):
            return self._on_heartbeat_failed(event, now_ms)
        if isinstance(event, ReconciliationCompleted):
            if self.state is MemberState.RECONCILING:
                self._move(self._after_reconciling)
            return []
        self.last_contact_ms = now_ms
        try:
            if isinstance(event, JoinAnswered):
                return self._on_join(event.response)
            if isinstance(event, SyncAnswered):
                return self._on_sync(event.response)
            return self._on_heartbeat(event)
        except MemberFailed as failure:
            return self._fail(failure)

    def _on_join(self, response: JoinResponse) -> list[Action]:
        if self.state is not MemberState.JOINING:
            return []
        refused = self._on_error(response)
        if refused is not None:
            return refused
        self.member_id = response.member_id
        self._move(MemberState.SYNCING)
        return []

    def _on_sync(self, response: SyncResponse) -> list[Action]:
        if self.state is not MemberState.SYNCING:
            return []
        refused = self._on_error(response)
        if refused is not None:
            return refused
        return self._on_assignment(response) if response.ready else []

    def _on_heartbeat(self, event: HeartbeatAnswered) -> list[Action]:
        if event.generation != self.generation or not self._holds_assignment():
            return []  # about an older generation, or the member already moved on
        return self._on_error(event.response) or []

    def _holds_assignment(self) -> bool:
        return self.state in (MemberState.STABLE, MemberState.RECONCILING)

    def _on_error(self, response: JoinResponse | SyncResponse | HeartbeatResponse) -> list[Action] | None:
        """None when the response carries no error; otherwise the actions that follow from it."""
        error = GroupError(response.error)
        if error is GroupError.NONE:
            return None
        if error is GroupError.REBALANCE_IN_PROGRESS:
            log.info("member %s: rejoining: %s", self.member_id, response.message)
            if self.state is MemberState.RECONCILING:
                self._after_reconciling = MemberState.REJOINING  # once the callbacks have run
            else:
                self._move(MemberState.UNJOINED if self.generation < 0 else MemberState.REJOINING)
            return []
        if error in (GroupError.ILLEGAL_GENERATION, GroupError.UNKNOWN_MEMBER_ID):
            # Fell out of the group: another member may already own these tasks.
            log.warning("member %s: lost its tasks: %s", self.member_id, response.message)
            actions = self._lose_all()
            if error is GroupError.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            return actions
        raise GroupRefused(error, response.message, response.assignor_error)

    def _on_unreachable(self, reason: str, now_ms: int) -> list[Action]:
        """The member's own request failed: give up on silence, else retry after a back-off (a join
        in flight is sent again)."""
        actions = self._lose_if_silent(reason, now_ms)
        if self.state is MemberState.JOINING:
            self._move(MemberState.UNJOINED if self.generation < 0 else MemberState.REJOINING)
        actions.append(Backoff(min(MAX_BACKOFF_MS, self.config.heartbeat_interval_ms)))
        return actions

    def _on_heartbeat_failed(self, event: HeartbeatFailed, now_ms: int) -> list[Action]:
        if event.generation != self.generation or not self._holds_assignment():
            return []
        return self._lose_if_silent(event.reason, now_ms)

    def _lose_if_silent(self, reason: str, now_ms: int) -> list[Action]:
        """After a whole session without contact the member assumes it was removed from the group:
        another member may own its tasks by now."""
        silent_ms = now_ms - self.last_contact_ms
        if silent_ms <= self.config.session_timeout_ms or self.generation < 0:
            return []
        log.warning("member %s: no contact with the coordinator for %.1f s: %s",
                    self.member_id, silent_ms / 1000, reason)
        return self._lose_all()

    def _on_assignment(self, sync: SyncResponse) -> list[Action]:
        """KIP-429, member step 3: revoke what moved (then rejoin), always call assigned."""
        try:
            got = self._decode(sync.user_data)
        except MalformedUserData as e:
            raise UnreadableAssignment(f"cannot read the assignment: {e}") from None
        code = AssignorError(got.error_code)
        if code is AssignorError.SHUTDOWN_REQUESTED:
            return self._shut_down_on_request(sync.generation)
        if code in (AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA, AssignorError.ASSIGNMENT_ERROR):
            raise AssignmentErrorReceived(code)  # nothing applied; _fail gives up what it holds
        try:
            decision = on_assignment_version(
                self.used_version, got.version, got.commonly_supported_version, self.latest_supported_version
            )
        except VersionMismatch as e:
            raise UnreadableAssignment(str(e)) from None
        # VERSION_PROBING: apply the assignment and rejoin (the version decision says how).
        rejoin = code is AssignorError.VERSION_PROBING
        revoked, added = self.active - got.active, got.active - self.active
        self.generation = sync.generation
        self.revoked_before_join = NO_TASKS
        actions: list[Action] = []
        if revoked:
            actions.append(RunCallback(CallbackKind.REVOKED, revoked, self.generation))
            rejoin = True
        self.active, self.standby = got.active, got.standby
        self.assignment_version = got.version
        round_protocol = sync.rebalance_protocol
        if round_protocol is not self.round_protocol:
            log.info("member %s: the group now runs %s", self.member_id, round_protocol.name)
            self.round_protocol = round_protocol
        if decision.rejoin:
            log.info(
                "member %s: %s subscription version %d -> %d (assignment version %d, commonly supported %d)",
                self.member_id, decision.action.value, self.used_version, decision.next_version,
                got.version, got.commonly_supported_version,
            )
            self.used_version = decision.next_version
            rejoin = True
        actions.append(RunCallback(CallbackKind.ASSIGNED, added, self.generation))
        actions.append(CompleteReconciliation())
        self._after_reconciling = MemberState.REJOINING if rejoin else MemberState.STABLE
        self._move(MemberState.RECONCILING)
        return actions

    def _shut_down_on_request(self, generation: int) -> list[Action]:
        """SHUTDOWN_REQUESTED: revoke everything cleanly, leave the group, stop, tell the host."""
        log.warning("member %s: the coordinator requested an application shutdown; revoking and leaving",
                    self.member_id)
        self.generation = generation
        actions: list[Action] = []
        if self.active:
            actions.append(RunCallback(CallbackKind.REVOKED, self.active, generation))
        actions.append(SendLeave(self.member_id))
        self.active, self.standby, self.revoked_before_join = NO_TASKS, NO_TASKS, NO_TASKS
        self.member_id = ""
        self.shutdown_requested = True
        self._move(MemberState.CLOSED)
        return actions

    def _close(self, leave: bool) -> list[Action]:
        """A clean close revokes what it holds (KIP-429); a dynamic member then leaves, so the group
        rebalances at once, while a static one stays (KIP-345): it may return within its session."""
        if self.state is MemberState.CLOSED:
            return []
        actions: list[Action] = []
        if self.active:
            actions.append(RunCallback(CallbackKind.REVOKED, self.active, self.generation))
            self.active = NO_TASKS
        if leave and self.member_id:
            actions.append(SendLeave(self.member_id))
        self._move(MemberState.CLOSED)
        return actions

    def _fail(self, failure: MemberFailed) -> list[Action]:
        """A stopped member must not keep processing: another may own its tasks now."""
        self.failure = failure
        who = self.member_id or "(not joined yet)"
        if self.config.group_instance_id is not None:
            who += f", instance {self.config.group_instance_id}"
        log.error("member %s stopped: %s", who, failure)
        actions = self._lose_all()
        self._move(MemberState.FAILED)
        return actions

    def _lose_all(self) -> list[Action]:
        actions: list[Action] = []
        if self.active:
            actions.append(RunCallback(CallbackKind.LOST, self.active, self.generation))
        self.active, self.standby, self.generation = NO_TASKS, NO_TASKS, -1
        self.revoked_before_join = NO_TASKS  # lost: another member may run them by now
        self._move(MemberState.UNJOINED)
        return actions

    def _move(self, to: MemberState) -> None:
        if to is not self.state and to not in TRANSITIONS[self.state]:
            raise InvalidTransition(f"invalid member transition {self.state.value} -> {to.value}")
        self.state = to
