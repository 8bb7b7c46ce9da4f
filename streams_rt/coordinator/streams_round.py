"""One Kafka Streams rebalance round as the group leader runs it: decode every subscription, choose
the protocol and the assignment version, run the HA sticky assignor, check the hand-off is safe,
and encode each member's AssignmentInfo at a version it can read."""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence

from streams_rt.assignment import AssignmentConfigs, ClientAssignment, ClientState, assign
from streams_rt.assignment.lag import RUNNING, is_caught_up, lag_code
from streams_rt.coordinator.assignment_content import SourceTopics, build_contents
from streams_rt.coordinator.departures import DepartureTracker
from streams_rt.coordinator.errors import SubscriptionRejected
from streams_rt.coordinator.group import (
    Member,
    MemberAssignment,
    RoundOutcome,
    SupersededCheck,
    assignment_inputs_changed,
    never_superseded,
)
from streams_rt.coordinator.protocol_policy import ProtocolPolicy
from streams_rt.coordinator.user_data import (
    AssignmentContent,
    DecodedSubscription,
    MemberWriter,
    RoundContent,
    StreamsUserDataCodec,
    UserDataCodec,
    parse_endpoint,
)
from streams_rt.kafka.offsets import BrokerUnreachable
from streams_rt.protocol import (
    MIN_ERROR_CODE_VERSION,
    NO_NEXT_REBALANCE,
    AssignorError,
    HostInfo,
    RebalanceProtocol,
    RoundVersions,
    TaskId,
)
from streams_rt.protocol.errors import MalformedUserData
from streams_rt.rpc.errors import GroupError, GroupErrorException, shorten

log = logging.getLogger(__name__)
CHECK_EVERY_MEMBERS = 64  # while writing a round's assignments, look this often whether it was superseded
END_OFFSETS_RETRY_MS = 5_000  # the next round after one that could not read the changelogs' end offsets


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


def _endpoint(s: DecodedSubscription) -> HostInfo | None:
    """The member's user endpoint as its assignment writes it back; ValueError names what does not fit."""
    text = s.info.user_endpoint if s.info is not None else None
    if text is None:
        return None
    try:
        return parse_endpoint(text)
    except ValueError as e:
        raise ValueError(f"subscription field user_endpoint {e}") from None


def enforce_handoff(
    planned: Mapping[str, ClientAssignment], claims: Mapping[str, frozenset[TaskId]]
) -> tuple[dict[str, ClientAssignment], bool]:
    """The fencing rule, checked here whatever the assignor did: a task still claimed by one member
    is never given to another in the same round. The claimant is told to revoke it; a follow-up
    round hands it over. Returns the safe assignment and whether a follow-up round is needed."""
    owners: dict[TaskId, str] = {}
    safe: dict[str, ClientAssignment] = {}
    followup = False
    for mid, a in planned.items():
        for t in a.active:
            if t in owners:
                raise AssertionError(f"task {t} assigned active to both {owners[t]} and {mid}")
            owners[t] = mid
    claimants: dict[TaskId, list[str]] = {}
    for mid, owned in claims.items():
        for t in owned:
            claimants.setdefault(t, []).append(mid)
    withheld: dict[str, set[TaskId]] = {}
    for mid, a in planned.items():
        keep = set(a.active)
        for t in a.active:
            holders = [other for other in claimants.get(t, ()) if other != mid]
            if holders:
                keep.discard(t)
                for h in holders:
                    withheld.setdefault(h, set()).add(t)
                log.warning("task %s withheld from %s: still owned by %s until they revoke it", t, mid, holders)
                followup = True
        safe[mid] = ClientAssignment(frozenset(keep), a.standby, a.warmup, a.revoke)
    for mid, tasks in withheld.items():
        a = safe[mid]
        safe[mid] = ClientAssignment(a.active - tasks, a.standby, a.warmup, a.revoke | tasks)
    return safe, followup


class StreamsRoundPlanner:
    """The RoundPlanner of a Kafka Streams application: the tasks come from its topology."""

    def __init__(
        self,
        tasks: Collection[TaskId],
        *,
        configs: AssignmentConfigs = AssignmentConfigs(),
        changelog_end_offsets: Callable[[], Mapping[TaskId, int]] = dict,
        scheduled_rebalance_max_delay_ms: int = 0,
        source_topics: Mapping[int, Sequence[str]] | None = None,
        codec: UserDataCodec | None = None,
        policy: ProtocolPolicy | None = None,
        wall_clock_ms: Callable[[], int] = epoch_ms,
    ) -> None:
        """`changelog_end_offsets` gives the end-offset sum of each stateful task's changelogs;
        tasks it leaves out are stateless. `scheduled_rebalance_max_delay_ms` (0: off) lets tasks of
        a departed client without a caught-up standby wait for it to return. `source_topics` maps a
        subtopology to its input topics (for the partitions in AssignmentInfo). `codec` fixes the
        latest version this coordinator reads and writes (default: streams_rt.protocol's latest).
        `wall_clock_ms` converts the scheduled next rebalance to Kafka's epoch milliseconds."""
        self.tasks = frozenset(tasks)
        self.configs = configs
        self.codec: UserDataCodec = codec or StreamsUserDataCodec()
        self.policy = policy or ProtocolPolicy()
        self.topics = SourceTopics(source_topics)
        self._end_offsets = changelog_end_offsets
        self._departures = DepartureTracker(scheduled_rebalance_max_delay_ms)
        self._wall_clock_ms = wall_clock_ms
        self.shutdown_requested = False
        self.draining: frozenset[str] = frozenset()  # member ids being drained
        # member id -> {stateful task: records behind its changelog's end} as the members reported
        # them in the subscriptions of the last applied round (0: running active; -1: unknown).
        self.reported_lags: Mapping[str, Mapping[TaskId, int]] = {}
        # member id -> the active tasks the last applied round gave it while it was caught up on them
        # (KIP-441's rule on the same lags): their takeover needs no restore worth waiting out.
        self.caught_up: Mapping[str, frozenset[TaskId]] = {}

    def start_drain(self, member_id: str, present: frozenset[str]) -> None:
        """From the next round `member_id` drains (assignment/drain.py); members no longer in the
        group (`present`) are forgotten."""
        self.draining = (self.draining & present) | {member_id}

    def request_shutdown(self) -> None:
        """From now on every round gives every member no tasks and SHUTDOWN_REQUESTED (KIP-725).
        Refused when no round can carry the error code (upgrade.from or the codec caps the
        AssignmentInfo version below 4): members would get empty assignments and keep running."""
        cap = self.latest_supported_version
        if self.policy.metadata_version_cap is not None:
            cap = min(cap, self.policy.metadata_version_cap)
        if cap < MIN_ERROR_CODE_VERSION:
            raise GroupErrorException(
                GroupError.INVALID_REQUEST,
                f"cannot request a shutdown: assignments are capped at version {cap} (upgrade.from"
                f" {self.policy.upgrade_from!r}), which cannot carry SHUTDOWN_REQUESTED (version"
                f" {MIN_ERROR_CODE_VERSION}+); finish the upgrade first",
            )
        self.shutdown_requested = True

    @property
    def latest_supported_version(self) -> int:
        return self.codec.latest_supported_version

    def decode_subscription(self, data: bytes) -> DecodedSubscription:
        """The subscription, checked at join for everything a round writes back about the member
        (its endpoint goes into every member's AssignmentInfo): one member's values can then never
        fail the round of the others. Raises SubscriptionRejected naming the field."""
        try:
            decoded = self.codec.decode_subscription(data)
        except MalformedUserData as e:
            raise SubscriptionRejected(shorten(str(e), 300), int(AssignorError.ASSIGNMENT_ERROR)) from None
        try:
            _endpoint(decoded)
        except ValueError as e:
            raise SubscriptionRejected(str(e), int(AssignorError.ASSIGNMENT_ERROR)) from None
        return decoded

    def static_rejoin_change(self, old: Member, new: Member, members: Mapping[str, Member]) -> str | None:
        """Why a static member's return within its session (KIP-345: it keeps its assignment, no
        round) needs a round after all: something its assignment, or everyone's, depends on changed.
        A restart that comes back as it was (same state, version, endpoint) costs no round; the
        metadata versions the group speaks, an endpoint every AssignmentInfo carries, or a state
        directory the assignor placed tasks by, do."""
        if (generic := assignment_inputs_changed(old, new, members)) is not None:
            return generic
        before, after = old.subscription, new.subscription
        if before is None or before.info is None or after.info is None:
            return "a subscription this coordinator cannot compare"
        if before.version != after.version:
            return f"its metadata version {before.version} -> {after.version}"
        if before.info.process_id != after.info.process_id:
            return "another process id (a new state directory)"
        if _endpoint(before) != _endpoint(after):
            return f"its endpoint {before.info.user_endpoint} -> {after.info.user_endpoint}"
        others = [m.subscription for mid, m in members.items() if mid != old.member_id and m.subscription is not None]
        latest, cap = self.latest_supported_version, self.policy.metadata_version_cap
        was, now = RoundVersions.of([*others, before], latest, cap), RoundVersions.of([*others, after], latest, cap)
        if was != now:
            return f"the group's commonly supported version {was.commonly_supported} -> {now.commonly_supported}"
        return None

    def __call__(self, members: Mapping[str, Member], generation: int, now_ms: int,
                 check: SupersededCheck = never_superseded) -> RoundOutcome:
        """The round's outcome. `check` is called between steps (and every CHECK_EVERY_MEMBERS members
        written): it raises RoundSuperseded once the round no longer matters, which stops it there."""
        subs: dict[str, DecodedSubscription] = {mid: m.subscription for mid, m in members.items()}
        latest = self.latest_supported_version
        versions = RoundVersions.of(subs.values(), latest, self.policy.metadata_version_cap)
        protocol = self.policy.choose(m.protocol for m in members.values())
        if versions.used < latest:
            log.info(
                "generation %d: sending assignments at version %d (commonly supported %d, latest %d)",
                generation, versions.used, versions.commonly_supported, latest,
            )
        if self.shutdown_requested:
            return self._shutdown_round(members, generation, versions, protocol)
        departures: DepartureTracker | None = None  # probing rounds keep it as it is
        readings: RoundReadings | None = None
        if versions.probing:
            planned = self._probing_assignment(members)
            next_at: int | None = now_ms  # everyone rejoins at the version it now knows to use
            log.info(
                "generation %d: version probing: a member subscribed above version %d; everyone keeps the"
                " tasks it has, gets version %d (commonly supported %d) and rejoins",
                generation, latest, versions.used, versions.commonly_supported,
            )
        else:
            departures = self._departures.copy()
            try:
                planned, next_at, readings = self._assign(members, subs, protocol, now_ms, departures, check)
            except BrokerUnreachable as e:
                # Kafka's StreamsPartitionAssignor does the same when it cannot list the changelogs'
                # end offsets: everyone keeps its tasks, and another round retries soon.
                departures, readings = None, None
                planned, next_at = self._probing_assignment(members), now_ms + END_OFFSETS_RETRY_MS
                log.warning("generation %d: the changelogs' end offsets are out of reach (%s); everyone keeps the "
                            "tasks it has, and the group rebalances again in %d s", generation, str(e),
                            END_OFFSETS_RETRY_MS // 1000)
        # Ownership claims come from the subscriptions. An EAGER member revoked everything before
        # joining: it reports its previous tasks (for stickiness) but claims nothing. An unreadable
        # (future) subscription claims nothing either.
        claims = {
            mid: s.info.prev_tasks if s.info and not members[mid].revoked_all else frozenset()
            for mid, s in subs.items()
        }
        check()
        safe, followup = enforce_handoff(planned, claims)
        if followup or any(a.revoke for a in safe.values()):
            next_at = now_ms
        endpoints: dict[str, HostInfo | None] = {}
        unwritable: dict[str, str] = {}  # checked at join; only a subscription decoded elsewhere gets here
        for mid, s in subs.items():
            try:
                endpoints[mid] = _endpoint(s)
            except ValueError as e:
                endpoints[mid], unwritable[mid] = None, str(e)
        shared, contents = build_contents(safe, endpoints, self.topics, self._wire_time(next_at, now_ms))
        check()
        write = self._writer(generation, versions, shared)
        assignments: dict[str, MemberAssignment] = {}
        for i, (mid, a) in enumerate(safe.items(), 1):
            assignments[mid] = self._encode(mid, generation, protocol, write, contents[mid], a, unwritable.get(mid))
            if i % CHECK_EVERY_MEMBERS == 0:
                check()
        return RoundOutcome(assignments, protocol, next_at, commit=self._keeper(departures, readings))

    def _writer(self, generation: int, versions: RoundVersions, shared: RoundContent) -> MemberWriter | str:
        """The round's assignment writer, or why there is none (then every member gets ASSIGNMENT_ERROR:
        what they all share cannot be written)."""
        try:
            return self.codec.assignment_writer(versions.used, versions.commonly_supported, shared)
        except Exception as e:
            log.exception("generation %d: cannot write what every member's assignment shares", generation)
            return type(e).__name__

    def _encode(
        self, member_id: str, generation: int, protocol: RebalanceProtocol, write: MemberWriter | str,
        content: AssignmentContent, tasks: ClientAssignment, unwritable: str | None,
    ) -> MemberAssignment:
        """One member's assignment; if it cannot be written, that member alone gets ASSIGNMENT_ERROR
        (and stops, so the group forgets it and a round moves its tasks to the others)."""
        if isinstance(write, str):
            unwritable = write  # logged once, by _writer
        elif unwritable is None:
            try:
                data = write(content)
                return MemberAssignment(generation, protocol, data, tasks=tasks)
            except Exception as e:
                log.exception("generation %d: cannot write member %s's assignment", generation, member_id)
                unwritable = type(e).__name__
        else:
            log.error("generation %d: cannot write member %s's assignment: %s", generation, member_id, unwritable)
        why = f"the coordinator cannot write this member's assignment ({unwritable})"
        return MemberAssignment(generation, protocol, b"", AssignorError.ASSIGNMENT_ERROR, why)

    def _keeper(self, departures: DepartureTracker | None,
                readings: RoundReadings | None) -> Callable[[], None] | None:
        """Keeps what a round recorded about departures and lags, once the group applies the round."""
        if departures is None or readings is None:
            return None

        def keep() -> None:
            self._departures = departures
            self.reported_lags = readings.lags
            self.caught_up = readings.caught_up

        return keep

    def _shutdown_round(
        self, members: Mapping[str, Member], generation: int, versions: RoundVersions, protocol: RebalanceProtocol
    ) -> RoundOutcome:
        shared = RoundContent(error_code=AssignorError.SHUTDOWN_REQUESTED)
        write = self.codec.assignment_writer(versions.used, versions.commonly_supported, shared)
        user_data = write(AssignmentContent())
        if versions.used < MIN_ERROR_CODE_VERSION:
            log.error(
                "generation %d: a shutdown was requested, but a member subscribed at version %d, which cannot"
                " carry SHUTDOWN_REQUESTED: the members get no tasks and keep running",
                generation, versions.used,
            )
        else:
            log.warning("generation %d: telling %d members that the application shuts down", generation, len(members))
        return RoundOutcome(
            {mid: MemberAssignment(generation, protocol, user_data) for mid in members},
            protocol,
        )

    def _wire_time(self, at_ms: int | None, now_ms: int) -> int:
        """Kafka's next_rebalance_ms: epoch ms, 0 for "rejoin now", Long.MAX_VALUE for none."""
        if at_ms is None:
            return NO_NEXT_REBALANCE
        if at_ms <= now_ms:
            return 0
        return self._wall_clock_ms() + (at_ms - now_ms)

    def _assign(
        self,
        members: Mapping[str, Member],
        subs: Mapping[str, DecodedSubscription],
        protocol: RebalanceProtocol,
        now_ms: int,
        departures: DepartureTracker,
        check: SupersededCheck,
    ) -> tuple[dict[str, ClientAssignment], int | None, RoundReadings]:
        by_process: dict[uuid.UUID, str] = {}
        clients: list[ClientState] = []
        for mid, d in sorted(subs.items(), key=lambda kv: -_owned_generation(members[kv[0]])):
            s = d.info
            assert s is not None
            if s.process_id in by_process:
                log.warning(
                    "member %s reuses process id %s of member %s; it gets no tasks this round",
                    mid, s.process_id, by_process[s.process_id],
                )
                continue
            by_process[s.process_id] = mid
            gen = _owned_generation(members[mid])
            clients.append(
                ClientState(
                    process_id=s.process_id,
                    capacity=members[mid].capacity,
                    tags=s.client_tags,
                    owned_active={t: gen for t in s.prev_tasks if t in self.tasks},
                    owned_standby=frozenset(t for t in s.standby_tasks if t in self.tasks),
                    task_offset_sums={t: v for t, v in s.task_offset_sums.items() if t in self.tasks},
                    revoked_all=members[mid].revoked_all,
                    draining=mid in self.draining,
                )
            )
        check()
        ends = self._end_offsets()  # a broker round trip: the round may be superseded meanwhile
        check()
        held = departures.held_tasks(
            by_process, lambda t: self._caught_up_elsewhere(t, clients, ends), now_ms
        )
        result = assign(self.tasks - held, clients, ends, self.configs, protocol, now_ms)
        check()
        departures.record_round({pid: a.active for pid, a in result.clients.items()})
        planned = {mid: ClientAssignment() for mid in members}
        for pid, a in result.clients.items():
            planned[by_process[pid]] = a
        next_at = now_ms if result.followup_rebalance else result.probing_rebalance_at_ms
        deadline = departures.next_deadline_ms()
        if deadline is not None:
            next_at = deadline if next_at is None else min(next_at, deadline)
        lags = {by_process[c.process_id]: _reported_lags(c, ends) for c in clients}
        acceptable = self.configs.acceptable_recovery_lag
        sums = {c.process_id: c.task_offset_sums for c in clients}
        caught_up = {
            by_process[pid]: frozenset(t for t in a.active if is_caught_up(ends.get(t), sums[pid].get(t), acceptable))
            for pid, a in result.clients.items()
        }
        return planned, next_at, RoundReadings(lags, caught_up)

    def _caught_up_elsewhere(self, task: TaskId, clients: Collection[ClientState], ends: Mapping[TaskId, int]) -> bool:
        """Could a present client take the task over without restoring? The assignor's own rule."""
        end, acceptable = ends.get(task), self.configs.acceptable_recovery_lag
        return any(is_caught_up(end, c.task_offset_sums.get(task), acceptable) for c in clients)

    @staticmethod
    def _probing_assignment(members: Mapping[str, Member]) -> dict[str, ClientAssignment]:
        """Everyone keeps what the coordinator last gave it, so nothing moves while versions settle."""
        out: dict[str, ClientAssignment] = {}
        for mid, m in members.items():
            tasks = m.assignment.tasks if m.assignment else ClientAssignment()
            out[mid] = ClientAssignment(active=tasks.active, standby=tasks.standby)
        return out


@dataclasses.dataclass(frozen=True)
class RoundReadings:
    """What a round read of the members' lags, kept once the group applies it: each member's reported
    lag per stateful task, and the active tasks it was given while caught up on them."""

    lags: Mapping[str, Mapping[TaskId, int]]
    caught_up: Mapping[str, frozenset[TaskId]]


def _reported_lags(client: ClientState, ends: Mapping[TaskId, int]) -> dict[TaskId, int]:
    """The client's lag on each stateful task it reported state for (0 when it runs it as active)."""
    lags = {}
    for task, offset_sum in client.task_offset_sums.items():
        end = ends.get(task)
        if end is not None:
            code = lag_code(end, offset_sum)
            lags[task] = 0 if code == RUNNING else code
    return lags


def _owned_generation(m: Member) -> int:
    """The generation a member's ownership claims date from (KIP-341); -1 if it holds none."""
    return m.assignment.generation if m.assignment is not None else -1
