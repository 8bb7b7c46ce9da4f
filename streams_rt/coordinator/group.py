"""The group's membership state machine, pure: every method takes `now_ms`, nothing here sleeps,
reads a clock or does I/O, so the rules can be unit-tested fast and exactly.

One group (one application.id). The coordinator is also the group leader: once every member has
rejoined, the round's input is frozen as a `PendingRound` and a `RoundAssigner` computes every
assignment at once. A driver computes it off the group's lock and hands the outcome back; any change
to the membership meanwhile supersedes the round, and its outcome is dropped.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from streams_rt.assignment import ClientAssignment
from streams_rt.coordinator.group_record import GroupRecord, MemberRecord
from streams_rt.protocol import AssignorError, RebalanceProtocol, TaskId
from streams_rt.rpc.errors import GroupError, GroupErrorException

log = logging.getLogger(__name__)


class GroupState(enum.Enum):
    """Kafka's group states."""

    EMPTY = "EMPTY"  # no members
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # collecting members for the next generation
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # every member joined; the assignor is computing the round
    STABLE = "STABLE"  # every member has (or can fetch) its assignment of the current generation


_VALID_TRANSITIONS: Mapping[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    # Back to PREPARING_REBALANCE when the membership changes before the round is applied.
    GroupState.COMPLETING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.STABLE: frozenset({GroupState.PREPARING_REBALANCE, GroupState.EMPTY}),
}
_REBALANCING = frozenset({GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE})


@dataclass(frozen=True)
class MemberAssignment:
    """What one member receives for one generation. `tasks` says the same as `user_data`, decoded:
    for describe, the saved record and version probing (which keeps everyone's tasks). `protocol`
    is None only when the round failed (the member gets an error, never tasks)."""

    generation: int
    protocol: RebalanceProtocol | None
    user_data: bytes
    assignor_error: int = 0
    message: str = ""
    tasks: ClientAssignment = ClientAssignment()
    # Rebuilt from a GroupRecord after a restart: says what the member holds, but has no bytes to
    # deliver; the member gets a fresh assignment from the next round.
    restored: bool = False

    def summary(self) -> dict[str, list[str]]:
        """`tasks` as sorted task id strings, for describe."""
        a = self.tasks
        return {name: [str(t) for t in sorted(tasks)] for name, tasks in
                (("active", a.active), ("standby", a.standby), ("warmup", a.warmup), ("revoke", a.revoke))}


@dataclass
class Member:
    member_id: str
    instance_id: str | None
    protocol: RebalanceProtocol
    subscription: Any  # decoded SubscriptionInfo; opaque to the state machine
    session_timeout_ms: int
    rebalance_timeout_ms: int
    last_seen_ms: int
    joined: bool = False  # has joined the round being collected
    assignment: MemberAssignment | None = None
    capacity: int = 1  # stream threads: the share of tasks this member asks for
    revoked_all: bool = False  # EAGER: joined holding nothing; its reported tasks are not claims
    # The generation of the last assignment the member fetched. It may be older than `assignment`
    # when a newer round was superseded before the member could fetch it (e.g. while it was saved).
    fetched_generation: int = -1

    def record(self) -> MemberRecord:
        a = self.assignment
        tasks = a.tasks if a is not None else ClientAssignment()
        return MemberRecord(
            self.member_id, self.instance_id, self.protocol, self.capacity, self.session_timeout_ms,
            self.rebalance_timeout_ms, a.generation if a is not None else -1,
            tuple(str(t) for t in sorted(tasks.active)), tuple(str(t) for t in sorted(tasks.standby)),
        )

    @classmethod
    def restore(cls, r: MemberRecord, now_ms: int) -> Member:
        """A member known from before a restart: it must rejoin, and its session starts now. Raises
        ValueError for a task id that does not parse."""
        m = cls(r.member_id, r.instance_id, r.protocol, None, r.session_timeout_ms, r.rebalance_timeout_ms, now_ms,
                capacity=r.capacity)
        if r.generation >= 0:
            tasks = ClientAssignment(frozenset(map(TaskId.parse, r.active)), frozenset(map(TaskId.parse, r.standby)))
            m.assignment = MemberAssignment(r.generation, r.protocol, b"", tasks=tasks, restored=True)
        return m


@dataclass(frozen=True)
class RoundOutcome:
    assignments: Mapping[str, MemberAssignment]
    protocol: RebalanceProtocol | None  # None: the round failed
    # When the next round must start on its own: a follow-up (now) or a probing rebalance.
    next_rebalance_at_ms: int | None = None
    failed: bool = False  # the assignor failed: every member got ASSIGNMENT_ERROR
    # The assigner's own state after this round (e.g. who held what), kept only if the round is applied.
    commit: Callable[[], None] | None = None


class RoundSuperseded(Exception):
    """The membership changed while a round was computed: its outcome would be dropped, so it stops."""


def never_superseded() -> None:
    """The check of a round nothing can supersede (computed under the group's own call)."""


# Raises RoundSuperseded once the round being computed was superseded; an assigner calls it
# between its steps, so a stale round stops at its next step rather than run to its end.
SupersededCheck = Callable[[], None]


class RoundAssigner(Protocol):
    def __call__(self, members: Mapping[str, Member], generation: int, now_ms: int,
                 check: SupersededCheck = never_superseded) -> RoundOutcome: ...


# Why a static member's return needs a round after all (None: it takes its old assignment as it is):
# (the member it replaces, the returning one, the group's members before the swap).
StaticRejoinCheck = Callable[[Member, Member, Mapping[str, Member]], "str | None"]


def assignment_inputs_changed(old: Member, new: Member, members: Mapping[str, Member]) -> str | None:
    """What any assignor depends on: the member's rebalance protocol and its capacity."""
    if old.protocol is not new.protocol:
        return f"its rebalance protocol {old.protocol.name} -> {new.protocol.name}"
    if old.capacity != new.capacity:
        return f"its capacity {old.capacity} -> {new.capacity}"
    return None


@dataclass(frozen=True)
class PendingRound:
    """A round's frozen input: copies of the members as they were when the last one joined."""

    number: int  # counts rounds handed out: an outcome applies only to the current one
    generation: int
    members: Mapping[str, Member]
    now_ms: int


def run_round(assigner: RoundAssigner, pending: PendingRound,
              check: SupersededCheck = never_superseded) -> RoundOutcome | None:
    """The assigner's outcome for `pending`; None when `check` found it superseded (it stopped); or
    a failed outcome (every member ASSIGNMENT_ERROR) when it raised: a bug in the assignor must not
    wedge the group silently. The member learns only that it failed; the log has the traceback."""
    try:
        return assigner(pending.members, pending.generation, pending.now_ms, check)
    except RoundSuperseded:
        log.info("the round for generation %d stopped: superseded while it was computed", pending.generation)
        return None
    except Exception as e:
        log.exception("assignor failed for generation %d", pending.generation)
        why = f"the assignor failed for generation {pending.generation} ({type(e).__name__}); see the coordinator log"
        failed = MemberAssignment(pending.generation, None, b"", AssignorError.ASSIGNMENT_ERROR, why)
        return RoundOutcome({mid: failed for mid in pending.members}, None, failed=True)


class GroupObserver(Protocol):
    """Told about rounds so metrics stay out of the state machine."""

    def rebalance_completed(self, generation: int, latency_ms: int, now_ms: int) -> None: ...

    def rebalance_failed(self, generation: int, now_ms: int) -> None: ...


class Group:
    def __init__(
        self,
        group_id: str,
        assigner: RoundAssigner | None,
        *,
        restored: GroupRecord | None = None,
        now_ms: int = 0,
        observer: GroupObserver | None = None,
        new_member_id: Callable[[str | None], str] | None = None,
        persistent: bool = False,
        hold_rounds_until_ms: int = 0,
        initial_rebalance_delay_ms: int = 0,
        static_rejoin_change: StaticRejoinCheck = assignment_inputs_changed,
    ) -> None:
        """With `assigner`, each round is computed at once, on the calling thread (single-threaded
        use); with None, a driver takes `pending_round()`, computes it off the lock and hands the
        outcome to `complete_round()`. `restored` is the record a previous coordinator saved: its
        members are expected back and must rejoin (a round starts at `now_ms`). `persistent`: someone
        saves `unsaved()` and reports `saved()`; no member can fetch a generation before its record is
        saved, so a restart never forgets a generation a member holds. The group never waits for the save.
        `hold_rounds_until_ms` delays the first round (a restarted coordinator's, for its members to
        come back). `initial_rebalance_delay_ms` (group.initial.rebalance.delay.ms) holds the first
        round of an empty group, as Kafka's broker does, until that long passed without another new
        member (at most a rebalance timeout): hosts that start together then share the first round,
        rather than the first taking every task and the others waiting for warm-ups.
        `static_rejoin_change` says when a static member's return within its session (KIP-345: no
        round) changed something its assignment depends on, so a round must run after all."""
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.generation = restored.generation if restored is not None else 0
        # The protocol of the last round (None before the first).
        self.protocol: RebalanceProtocol | None = restored.protocol if restored is not None else None
        self.members: dict[str, Member] = {}
        self._assigner = assigner
        self._observer = observer
        self._static: dict[str, str] = {}  # group.instance.id -> current member id
        self._new_member_id = new_member_id or (lambda inst: f"{inst or 'member'}-{uuid.uuid4()}")
        self._rebalance_deadline_ms = 0
        self._next_rebalance_at_ms: int | None = None
        self._round_started_ms = 0
        self._round_reasons: list[str] = []  # why the current (or last) round started, and what superseded it
        self._undelivered: set[str] = set()  # members of the last round yet to fetch their assignment
        # The input of the round handed out (COMPLETING_REBALANCE), frozen when first asked for.
        self._pending: PendingRound | None = None
        self._handed_out_ms = 0
        self._rounds_handed_out = 0
        # Generations up to this one are saved and may be delivered (None: nothing to save to).
        self._durable_generation: int | None = self.generation if persistent else None
        self._changes = 0  # counts record changes; the saver reports the count it saved
        self._saved_changes = 0
        self._hold_until_ms = hold_rounds_until_ms
        self._initial_delay_ms = initial_rebalance_delay_ms
        self._hold_cap_ms = hold_rounds_until_ms  # the initial delay never holds a round past this
        self._static_rejoin_change = static_rejoin_change
        for r in restored.members if restored is not None else ():
            self.members[r.member_id] = Member.restore(r, now_ms)
            if r.instance_id is not None:
                self._static[r.instance_id] = r.member_id
        if self.members:
            self._prepare_rebalance(now_ms, f"coordinator restarted with {len(self.members)} known members")

    def record(self) -> GroupRecord:
        """What a restarted coordinator needs to recognise the current members."""
        return GroupRecord(self.generation, self.protocol, tuple(m.record() for m in self.members.values()))

    # ---- transitions -------------------------------------------------------------------------
    def _transition(self, to: GroupState) -> None:
        if to not in _VALID_TRANSITIONS[self.state]:
            raise AssertionError(f"invalid group transition {self.state.value} -> {to.value}")
        self.state = to

    def _prepare_rebalance(self, now_ms: int, reason: str) -> None:
        """Start collecting members for a round. A round being computed is superseded instead: the
        members that joined it stay joined, so the next round forms as soon as the change allows."""
        if self.state is GroupState.PREPARING_REBALANCE:
            return
        if self.state is GroupState.COMPLETING_REBALANCE:
            log.info("group %s: generation %d's round superseded: %s", self.group_id, self.generation + 1, reason)
            self._round_reasons.append(reason)
            self._pending = None
            self._transition(GroupState.PREPARING_REBALANCE)
            return
        log.info("group %s: preparing rebalance after generation %d: %s", self.group_id, self.generation, reason)
        self._transition(GroupState.PREPARING_REBALANCE)
        self._round_started_ms = now_ms
        self._round_reasons = [reason]
        self._next_rebalance_at_ms = None
        self._undelivered.clear()  # a round superseded before everyone fetched it is not measured
        for m in self.members.values():
            m.joined = False
        timeout = max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        self._rebalance_deadline_ms = now_ms + timeout

    def _maybe_complete_round(self, now_ms: int) -> None:
        """Once every member has joined, freeze the round's input and hand it out."""
        if self.state is not GroupState.PREPARING_REBALANCE:
            return
        if not self.members:
            self._transition(GroupState.EMPTY)
            log.info("group %s: empty at generation %d", self.group_id, self.generation)
            return
        if not all(m.joined for m in self.members.values()) or now_ms < self._hold_until_ms:
            return
        self._rounds_handed_out += 1
        self._pending, self._handed_out_ms = None, now_ms
        self._transition(GroupState.COMPLETING_REBALANCE)
        if self._assigner is not None:
            pending = self.pending_round()
            assert pending is not None
            outcome = run_round(self._assigner, pending)
            assert outcome is not None, "only a round computed off this call can be superseded"
            self.complete_round(pending, outcome, now_ms)

    @property
    def round_reason(self) -> str:
        """Why the current (or last) round started, then what superseded it while it was computed."""
        return "; then ".join(self._round_reasons)

    @property
    def round_started_ms(self) -> int:
        """When the current (or last) round started collecting members (`now_ms` of that call)."""
        return self._round_started_ms

    def pending_round(self) -> PendingRound | None:
        """The round to compute, while the group is COMPLETING_REBALANCE. Its members are copied
        when it is first asked for, not at every join: joins arriving one by one each supersede the
        round before, and copying every member for each of them made forming a group of n members
        cost n squared. Nothing a round reads changes without superseding it, so the copy is the
        same whenever it is made."""
        if self.state is not GroupState.COMPLETING_REBALANCE:
            return None
        if self._pending is None:
            members = {mid: dataclasses.replace(m) for mid, m in self.members.items()}
            self._pending = PendingRound(self._rounds_handed_out, self.generation + 1, members, self._handed_out_ms)
        return self._pending

    @property
    def pending_number(self) -> int | None:
        """The number of the round to compute (cheap: nothing is copied), None when there is none."""
        return self._rounds_handed_out if self.state is GroupState.COMPLETING_REBALANCE else None

    def complete_round(self, pending: PendingRound, outcome: RoundOutcome, now_ms: int) -> bool:
        """Apply `pending`'s outcome: a new generation. False (nothing changes) when the round was
        superseded while it was computed."""
        if pending.number != self.pending_number:
            log.info("group %s: dropped the outcome of a superseded round (generation %d)",
                     self.group_id, pending.generation)
            return False
        self._pending = None
        self.generation = pending.generation
        if outcome.failed and self._observer:
            self._observer.rebalance_failed(self.generation, now_ms)
        if outcome.commit is not None:
            outcome.commit()
        self.protocol = outcome.protocol or self.protocol
        for mid, m in self.members.items():
            m.assignment = outcome.assignments[mid]
            m.joined = False
        self._undelivered = set(self.members)
        self._next_rebalance_at_ms = outcome.next_rebalance_at_ms
        self._transition(GroupState.STABLE)
        self._record_changed()
        log.debug(  # the coordinator logs the round at INFO, with what moved
            "group %s: generation %d formed with %d members (%s)", self.group_id, self.generation,
            len(self.members), self.protocol.name if self.protocol is not None else "no protocol",
        )
        return True

    def _record_changed(self) -> None:
        """A new generation, or membership changed without a round (a static member's new id, a
        member gone). Until it is saved, a restart merely forgets the new id (that member rejoins
        as a new one) or waits for the gone member's session to expire."""
        if self._durable_generation is not None:
            self._changes += 1

    # ---- persistence (the saver runs off the group lock) -------------------------------------
    def unsaved(self) -> tuple[int, GroupRecord] | None:
        """The record to save and its change count, or None when the saved record is current."""
        if not self.has_unsaved:
            return None
        return self._changes, self.record()

    @property
    def has_unsaved(self) -> bool:
        """Cheap (no record is built): has the record changed since the last save?"""
        return self._changes != self._saved_changes

    def saved(self, changes: int, generation: int) -> None:
        """The record of `unsaved()` (at `changes`, of `generation`) is durable: deliver up to it."""
        assert self._durable_generation is not None, "saved() on a group without a store"
        self._saved_changes = max(self._saved_changes, changes)
        self._durable_generation = max(self._durable_generation, generation)

    @property
    def saving(self) -> bool:
        """The current generation is formed but not yet saved: its syncs answer "not ready"."""
        return self._durable_generation is not None and self._durable_generation < self.generation

    def _forget(self, member_id: str, reason: str) -> None:
        m = self.members.pop(member_id)
        if m.instance_id is not None and self._static.get(m.instance_id) == member_id:
            del self._static[m.instance_id]
        self._undelivered.discard(member_id)
        log.info("group %s: member %s removed: %s", self.group_id, member_id, reason)
        self._record_changed()

    def _remove(self, member_id: str, now_ms: int, reason: str) -> None:
        self._forget(member_id, reason)
        if not self.members:
            if self.state is not GroupState.EMPTY:
                self._pending = None
                self._transition(GroupState.EMPTY)
            return
        self._prepare_rebalance(now_ms, f"member {member_id} left ({reason})")
        self._maybe_complete_round(now_ms)

    # ---- lookups -----------------------------------------------------------------------------
    def _member(self, member_id: str, instance_id: str | None) -> Member:
        if instance_id is not None:
            current = self._static.get(instance_id)
            if current is not None and current != member_id:
                raise GroupErrorException(
                    GroupError.FENCED_INSTANCE_ID,
                    f"group.instance.id {instance_id!r} now belongs to member {current}, not {member_id}",
                )
        m = self.members.get(member_id)
        if m is None:
            raise GroupErrorException(GroupError.UNKNOWN_MEMBER_ID, f"member {member_id!r} is not in the group")
        return m

    # ---- member calls ------------------------------------------------------------------------
    def join(
        self,
        *,
        member_id: str,
        instance_id: str | None,
        protocol: RebalanceProtocol,
        subscription: Any,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        now_ms: int,
        capacity: int = 1,
        generation: int = -1,
        revoked_all: bool = False,
    ) -> str:
        """Admit or re-admit a member; returns its member id. A known member rejoining (e.g. after
        revoking moved tasks) starts a new round; a static member coming back does not. A known
        member that says it holds an assignment of another generation than its last (or than the
        last it fetched) is refused."""
        if member_id:
            m = self._member(member_id, instance_id)
            current = m.assignment.generation if m.assignment is not None else -1
            if generation not in (-1, current, m.fetched_generation):
                raise GroupErrorException(
                    GroupError.ILLEGAL_GENERATION,
                    f"generation {generation} is stale: member {member_id}'s last assignment is of"
                    f" generation {current}",
                )
            m.subscription, m.protocol, m.last_seen_ms = subscription, protocol, now_ms
            m.session_timeout_ms, m.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
            m.capacity, m.revoked_all = capacity, revoked_all
            self._prepare_rebalance(now_ms, f"member {member_id} rejoined")
            m.joined = True
            self._maybe_complete_round(now_ms)
            return member_id

        new_id = self._new_member_id(instance_id)
        new = Member(
            new_id, instance_id, protocol, subscription, session_timeout_ms, rebalance_timeout_ms, now_ms,
            capacity=capacity, revoked_all=revoked_all,
        )
        old_id = self._static.get(instance_id) if instance_id is not None else None
        if instance_id is not None and old_id is not None:
            # KIP-345: the instance came back within the session timeout; it replaces (and fences)
            # its old member id and keeps its assignment, so the group need not rebalance, unless it
            # came back changed in a way its assignment depends on (Kafka: a changed protocol).
            # (During a round, the round takes the member as it is now.)
            changed = (self._static_rejoin_change(self.members[old_id], new, self.members)
                       if self.state is GroupState.STABLE else None)
            old = self.members.pop(old_id)
            if changed is None:
                new.assignment, new.joined, new.fetched_generation = old.assignment, old.joined, old.fetched_generation
            # else: the new process holds nothing yet; it waits for the round (sync answers nothing till then)
            if old_id in self._undelivered:
                self._undelivered.discard(old_id)
                self._undelivered.add(new_id)
            self.members[new_id] = new
            self._static[instance_id] = new_id
            self._record_changed()
            if changed is not None:
                self._prepare_rebalance(now_ms, f"static member {instance_id} rejoined as {new_id} with {changed}")
            else:
                log.info("group %s: static member %s rejoined as %s, keeping generation %d's assignment",
                         self.group_id, instance_id, new_id, self.generation)
            if self.state is GroupState.COMPLETING_REBALANCE:
                self._prepare_rebalance(now_ms, f"static member {instance_id} rejoined as {new_id}")
            if self.state is GroupState.PREPARING_REBALANCE:
                new.joined = True
                self._maybe_complete_round(now_ms)
            return new_id

        was_empty = self.state is GroupState.EMPTY
        self.members[new_id] = new
        if instance_id is not None:
            self._static[instance_id] = new_id
        log.info("group %s: member %s joined (%s, capacity %d%s); %d members now", self.group_id, new_id,
                 protocol.name, capacity, f", group.instance.id {instance_id}" if instance_id else "",
                 len(self.members))
        self._prepare_rebalance(now_ms, f"new member {new_id} joined")
        self._hold_for_more_members(now_ms, rebalance_timeout_ms, first=was_empty)
        self._rebalance_deadline_ms = max(self._rebalance_deadline_ms, now_ms + rebalance_timeout_ms)
        new.joined = True
        self._maybe_complete_round(now_ms)
        return new_id

    def _hold_for_more_members(self, now_ms: int, rebalance_timeout_ms: int, first: bool) -> None:
        """group.initial.rebalance.delay.ms: the first member of an empty group opens the hold; each
        new member joining while it lasts extends it, up to one rebalance timeout from the first."""
        if self._initial_delay_ms <= 0:
            return
        if first:
            self._hold_cap_ms = now_ms + rebalance_timeout_ms
            self._hold_until_ms = min(now_ms + self._initial_delay_ms, self._hold_cap_ms)
            log.info("group %s: first round held %d ms for more members (group.initial.rebalance.delay.ms)",
                     self.group_id, self._initial_delay_ms)
        elif now_ms < self._hold_until_ms:
            self._hold_until_ms = max(self._hold_until_ms, min(now_ms + self._initial_delay_ms, self._hold_cap_ms))

    def sync(self, *, member_id: str, instance_id: str | None, known_generation: int,
             now_ms: int) -> MemberAssignment | None:
        """The member's assignment if it is newer than `known_generation`; None while the round it
        joined is still collecting members. Refuses a member that has to rejoin first."""
        m = self._member(member_id, instance_id)
        m.last_seen_ms = now_ms
        if m.assignment is not None and m.assignment.generation > known_generation and not m.assignment.restored:
            if self._durable_generation is not None and m.assignment.generation > self._durable_generation:
                return None  # formed, not saved yet: a restart could forget it
            got = m.assignment
            m.fetched_generation = got.generation
            self._delivered(member_id, now_ms)
            if got.assignor_error:
                # The member stops on this error: the others need not wait out its timeouts.
                self._remove(member_id, now_ms, f"its assignment failed (assignor error {got.assignor_error})")
            return got
        if self.state in _REBALANCING:
            if m.joined:
                return None
            raise GroupErrorException(GroupError.REBALANCE_IN_PROGRESS, "a rebalance is in progress; rejoin")
        assert m.assignment is not None
        return m.assignment

    def _delivered(self, member_id: str, now_ms: int) -> None:
        if member_id in self._undelivered:
            self._undelivered.discard(member_id)
            if not self._undelivered and self._observer:
                self._observer.rebalance_completed(self.generation, now_ms - self._round_started_ms, now_ms)

    def heartbeat(self, *, member_id: str, instance_id: str | None, generation: int, now_ms: int) -> None:
        """Keeps the session alive; tells the member to rejoin or that its generation is stale."""
        m = self._member(member_id, instance_id)
        m.last_seen_ms = now_ms
        self.check_generation(member_id=member_id, instance_id=instance_id, generation=generation)
        if self.state in _REBALANCING:
            raise GroupErrorException(GroupError.REBALANCE_IN_PROGRESS, "a rebalance is in progress; rejoin")

    def check_generation(self, *, member_id: str, instance_id: str | None, generation: int) -> None:
        """The fencing rule: a call carrying anything but the member's current generation is refused."""
        m = self._member(member_id, instance_id)
        current = m.assignment.generation if m.assignment is not None else -1
        if generation != self.generation or generation != current:
            raise GroupErrorException(
                GroupError.ILLEGAL_GENERATION,
                f"generation {generation} is stale: the group is at generation {self.generation}",
            )

    def leave(self, *, member_id: str, instance_id: str | None, now_ms: int) -> None:
        self._member(member_id, instance_id)
        self._remove(member_id, now_ms, "left the group")

    def remove_unreachable(self, member_id: str, now_ms: int, reason: str) -> bool:
        """Remove a member whose host was found dead (it refuses connections) before its session
        expires, as if it had left: a round starts now. True when removed. A static member
        (group.instance.id) is kept, as Kafka keeps it: it is expected back, and only its session
        timeout removes it; so is an unknown member (already gone). A member removed while in fact
        alive gets UNKNOWN_MEMBER_ID on its next call and rejoins as a new member, as after a
        session expiry."""
        m = self.members.get(member_id)
        if m is None:
            return False
        if m.instance_id is not None:
            log.info("group %s: static member %s (group.instance.id %s) kept: %s; it is expected back, so only"
                     " its session timeout (%d ms) removes it", self.group_id, member_id, m.instance_id, reason,
                     m.session_timeout_ms)
            return False
        self._remove(member_id, now_ms, reason)
        return True

    # ---- time --------------------------------------------------------------------------------
    def tick(self, now_ms: int) -> None:
        """Expire sessions, end a round whose rebalance timeout passed, start scheduled rounds."""
        for mid, m in list(self.members.items()):
            if now_ms - m.last_seen_ms > m.session_timeout_ms and mid in self.members:
                self._remove(mid, now_ms, f"session timeout ({m.session_timeout_ms} ms) expired")
        if self.state is GroupState.PREPARING_REBALANCE and now_ms >= self._hold_until_ms:
            self._maybe_complete_round(now_ms)
        deadline_ms = max(self._rebalance_deadline_ms, self._hold_until_ms)
        if self.state is GroupState.PREPARING_REBALANCE and now_ms >= deadline_ms:
            late = [mid for mid, m in self.members.items() if not m.joined]
            for mid in late:
                self._forget(mid, "did not rejoin within the rebalance timeout")
            if late and self._observer:
                self._observer.rebalance_failed(self.generation + 1, now_ms)
            self._maybe_complete_round(now_ms)
        if (
            self.state is GroupState.STABLE
            and self._next_rebalance_at_ms is not None
            and now_ms >= self._next_rebalance_at_ms
        ):
            self._prepare_rebalance(now_ms, "scheduled (follow-up or probing) rebalance")

    @property
    def pending_deliveries(self) -> int:
        """Members of the last round that have not fetched their assignment yet."""
        return len(self._undelivered)

    def request_rebalance(self, now_ms: int, reason: str) -> None:
        """Start a round now, e.g. when the set of tasks or the assigner's settings changed (a round
        being computed is recomputed)."""
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(now_ms, reason)
            self._maybe_complete_round(now_ms)
