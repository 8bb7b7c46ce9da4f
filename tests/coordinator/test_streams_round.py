"""The Streams round, pure: version choice, the hand-off guard, probing, real codecs and assignor."""

from __future__ import annotations

import logging
import uuid

import pytest

from streams_rt.assignment import AssignmentConfigs, ClientAssignment
from streams_rt.coordinator.errors import SubscriptionRejected
from streams_rt.coordinator.group import Member, MemberAssignment, RoundSuperseded
from streams_rt.coordinator.protocol_policy import ProtocolPolicy
from streams_rt.coordinator.streams_round import CHECK_EVERY_MEMBERS, StreamsRoundPlanner, enforce_handoff
from streams_rt.coordinator.user_data import (
    AssignmentContent,
    DecodedSubscription,
    MemberWriter,
    RoundContent,
    StreamsUserDataCodec,
)
from streams_rt.protocol import (
    NO_NEXT_REBALANCE,
    AssignorError,
    HostInfo,
    RebalanceProtocol,
    TaskId,
    TopicPartition,
    decode_assignment,
)
from streams_rt.protocol.subscription import SubscriptionInfo
from streams_rt.rpc.errors import GroupError, GroupErrorException
from streams_rt.tasks.streams_codec import StreamsMemberCodec

T = [TaskId(0, p) for p in range(6)]
COOPERATIVE, EAGER = RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER


def sub(version: int, latest: int | None = None, active: frozenset[TaskId] = frozenset()) -> SubscriptionInfo:
    return SubscriptionInfo.for_version(
        version, uuid.uuid4(), latest_supported_version=latest or version,
        task_offset_sums={t: -2 for t in active},
    )


def dec(s: SubscriptionInfo) -> DecodedSubscription:
    return DecodedSubscription(s.version, s.latest_supported_version, s)


FUTURE = DecodedSubscription(12, 12, None)


def member(
    mid: str, s: SubscriptionInfo | DecodedSubscription, protocol: RebalanceProtocol = COOPERATIVE,
    gen: int | None = None, tasks: ClientAssignment | None = None,
) -> Member:
    d = s if isinstance(s, DecodedSubscription) else dec(s)
    m = Member(mid, None, protocol, d, 1000, 1000, 0, joined=True)
    if gen is not None:
        m.assignment = MemberAssignment(gen, protocol, b"", tasks=tasks or ClientAssignment())
    return m


def test_malformed_subscription_is_rejected_with_assignment_error() -> None:
    with pytest.raises(SubscriptionRejected) as e:
        StreamsRoundPlanner(T).decode_subscription(b"\x00\x00\x00\x0b\x00")
    assert e.value.assignor_error == AssignorError.ASSIGNMENT_ERROR and "byte" in str(e.value)


def test_handoff_guard_withholds_task_still_claimed_by_another_member() -> None:
    planned = {"a": ClientAssignment(active=frozenset(T[:2])), "b": ClientAssignment(active=frozenset(T[2:]))}
    safe, followup = enforce_handoff(planned, {"a": frozenset(T[:3]), "b": frozenset()})
    assert followup
    assert safe["b"].active == frozenset(T[3:]) and safe["a"].revoke == {T[2]}


def test_handoff_guard_refuses_two_active_owners() -> None:
    planned = {"a": ClientAssignment(active=frozenset(T[:2])), "b": ClientAssignment(active=frozenset(T[1:]))}
    with pytest.raises(AssertionError, match="both"):
        enforce_handoff(planned, {})


def test_cooperative_round_revokes_only_moved_tasks_and_schedules_followup() -> None:
    planner = StreamsRoundPlanner(T)
    a = member("a", sub(11, 11, frozenset(T)), gen=1)
    b = member("b", sub(11, 11))
    out = planner({"a": a, "b": b}, 2, now_ms=100)
    assert out.protocol is COOPERATIVE and out.next_rebalance_at_ms == 100
    got_a = decode_assignment(out.assignments["a"].user_data)
    got_b = decode_assignment(out.assignments["b"].user_data)
    assert set(got_a.active_tasks) < set(T) and not got_b.active_tasks  # b waits for a to revoke
    assert out.assignments["a"].tasks.revoke
    # Follow-up: a rejoins without the revoked tasks; b now gets them.
    kept = frozenset(got_a.active_tasks)
    out2 = planner({"a": member("a", sub(11, 11, kept), gen=2), "b": member("b", sub(11, 11), gen=2)}, 3, 200)
    got_b = decode_assignment(out2.assignments["b"].user_data)
    assert set(got_b.active_tasks) == set(T) - kept and out2.next_rebalance_at_ms is None


class CountingCodec(StreamsUserDataCodec):
    """Counts the round writers made and the member assignments written."""

    def __init__(self) -> None:
        super().__init__()
        self.writers = self.written = 0

    def assignment_writer(self, version: int, commonly_supported: int, shared: RoundContent = RoundContent()
                          ) -> MemberWriter:
        self.writers += 1
        write = super().assignment_writer(version, commonly_supported, shared)

        def counted(content: AssignmentContent) -> bytes:
            self.written += 1
            return write(content)

        return counted


def test_a_round_superseded_during_its_broker_call_stops_before_the_assignor() -> None:
    """The changelogs' end offsets are a broker round trip: a membership change meanwhile stops the
    round at its next step, and nothing of it is assigned or written."""
    superseded = False

    def end_offsets() -> dict[TaskId, int]:
        nonlocal superseded
        superseded = True  # a member joined while the broker answered
        return {}

    def check() -> None:
        if superseded:
            raise RoundSuperseded()

    codec = CountingCodec()
    planner = StreamsRoundPlanner(T, changelog_end_offsets=end_offsets, codec=codec)
    with pytest.raises(RoundSuperseded):
        planner({"a": member("a", sub(11)), "b": member("b", sub(11))}, 1, 0, check)
    assert codec.writers == 0 and codec.written == 0 and not planner.reported_lags


def test_a_round_superseded_while_writing_stops_within_a_few_members() -> None:
    codec = CountingCodec()
    many = [TaskId(0, p) for p in range(500)]

    def check() -> None:
        if codec.written:
            raise RoundSuperseded()

    members = {f"m{i}": member(f"m{i}", sub(11)) for i in range(500)}
    with pytest.raises(RoundSuperseded):
        StreamsRoundPlanner(many, codec=codec)(members, 1, 0, check)
    assert codec.writers == 1 and codec.written == CHECK_EVERY_MEMBERS


def test_one_writer_per_round_whatever_the_member_count() -> None:
    codec = CountingCodec()
    members = {f"m{i}": member(f"m{i}", sub(11)) for i in range(100)}
    out = StreamsRoundPlanner(T, codec=codec)(members, 1, 0)
    assert codec.writers == 1 and codec.written == 100 and len(out.assignments) == 100


def test_eager_round_hands_over_at_once() -> None:
    planner = StreamsRoundPlanner(T)
    out = planner({"a": member("a", sub(11), EAGER, gen=1), "b": member("b", sub(11), EAGER)}, 2, 0)
    assert out.protocol is EAGER
    sizes = sorted(len(decode_assignment(a.user_data).active_tasks) for a in out.assignments.values())
    assert sizes == [3, 3]


def test_assignment_is_encoded_at_the_lowest_version_used() -> None:
    planner = StreamsRoundPlanner(T)
    out = planner({"a": member("a", sub(9, 11)), "b": member("b", sub(11, 11))}, 1, 0)
    infos = [decode_assignment(a.user_data) for a in out.assignments.values()]
    assert {(i.version, i.commonly_supported_version) for i in infos} == {(9, 11)}


def test_probing_round_keeps_everyones_tasks() -> None:
    planner = StreamsRoundPlanner(T)
    a = member("a", sub(11, 11, frozenset(T[:3])), gen=4, tasks=ClientAssignment(active=frozenset(T[:3])))
    b = member("b", FUTURE, gen=4, tasks=ClientAssignment(active=frozenset(T[3:])))
    out = planner({"a": a, "b": b}, 5, 77)
    assert out.next_rebalance_at_ms == 77
    assert set(decode_assignment(out.assignments["b"].user_data).active_tasks) == set(T[3:])


def test_member_codec_round_trips_through_the_planner() -> None:
    codec = StreamsMemberCodec(uuid.uuid4())
    data = codec.encode_subscription(11, frozenset(T[:1]), frozenset(T[1:2]))
    s = StreamsRoundPlanner(T).decode_subscription(data).info
    assert s is not None and s.prev_tasks == {T[0]} and s.standby_tasks == {T[1]}


def test_warmups_schedule_a_probing_rebalance() -> None:
    ends = {t: 1_000_000 for t in T}
    planner = StreamsRoundPlanner(T, changelog_end_offsets=lambda: ends)
    a = member("a", sub(11, 11, frozenset(T)), gen=1)
    b = member("b", sub(11, 11))  # no state at all: actives may not move to it before it warms up
    out = planner({"a": a, "b": b}, 2, now_ms=1_000)
    assert out.assignments["b"].tasks.warmup
    assert not decode_assignment(out.assignments["b"].user_data).active_tasks
    assert out.next_rebalance_at_ms == 1_000 + planner.configs.probing_rebalance_interval_ms


def test_assignment_carries_partitions_by_host_and_standby_partitions() -> None:
    """AssignmentInfo's partition fields come from each subtopology's source topics: task (0, p)
    reads partition p of both topics, so it appears twice in the active list, in partition order."""
    ends = {t: 1_000 for t in T}
    planner = StreamsRoundPlanner(
        T, configs=AssignmentConfigs(num_standby_replicas=1), changelog_end_offsets=lambda: ends,
        source_topics={0: ["in-a", "in-b"]},
    )
    def parts(tasks: list[TaskId]) -> tuple[TopicPartition, ...]:
        return tuple(sorted(TopicPartition(tp, t.partition) for t in tasks for tp in ("in-a", "in-b")))

    sa = SubscriptionInfo.for_version(11, uuid.uuid4(), user_endpoint="ha:1",
                                      task_offset_sums={**{t: 1_000 for t in T[3:]}, **{t: -2 for t in T[:3]}})
    sb = SubscriptionInfo.for_version(11, uuid.uuid4(), user_endpoint="hb:2",
                                      task_offset_sums={**{t: 1_000 for t in T[:3]}, **{t: -2 for t in T[3:]}})
    out = planner({"a": member("a", sa, gen=1), "b": member("b", sb, gen=1)}, 2, now_ms=100)
    ia = decode_assignment(out.assignments["a"].user_data)
    assert ia.active_tasks == (T[0], T[1], T[2], T[0], T[1], T[2])
    ha, hb = HostInfo("ha", 1), HostInfo("hb", 2)
    assert dict(ia.partitions_by_host) == {ha: parts(T[:3]), hb: parts(T[3:])}
    assert dict(ia.standby_tasks) == {t: parts([t]) for t in T[3:]}
    assert dict(ia.standby_partitions_by_host) == {ha: parts(T[3:]), hb: parts(T[:3])}
    assert ia.next_rebalance_ms == NO_NEXT_REBALANCE
    assert decode_assignment(out.assignments["b"].user_data).partitions_by_host == ia.partitions_by_host


def test_next_rebalance_time_is_sent_in_epoch_ms_or_zero_for_now() -> None:
    ends = {t: 1_000_000 for t in T}
    planner = StreamsRoundPlanner(T, changelog_end_offsets=lambda: ends, wall_clock_ms=lambda: 5_000_000)
    out = planner({"a": member("a", sub(11, 11, frozenset(T)), gen=1), "b": member("b", sub(11, 11))}, 2, 1_000)
    interval = planner.configs.probing_rebalance_interval_ms
    assert decode_assignment(out.assignments["b"].user_data).next_rebalance_ms == 5_000_000 + interval
    members = {"a": member("a", sub(11, 11, frozenset(T)), gen=1), "b": member("b", sub(11, 11))}
    out = StreamsRoundPlanner(T)(members, 2, 7)
    assert out.next_rebalance_at_ms == 7  # a revokes: the follow-up round is due at once
    assert decode_assignment(out.assignments["a"].user_data).next_rebalance_ms == 0


def test_capacity_weights_the_share_of_tasks() -> None:
    a, b = member("a", sub(11, 11)), member("b", sub(11, 11))
    a.capacity = 2
    out = StreamsRoundPlanner(T)({"a": a, "b": b}, 1, 0)
    sizes = {mid: len(decode_assignment(x.user_data).active_tasks) for mid, x in out.assignments.items()}
    assert sizes == {"a": 4, "b": 2}


def test_coordinator_with_an_older_latest_version_probes_on_a_current_subscription() -> None:
    """A coordinator whose latest version is 10 cannot read a v11 subscription: version probing."""
    planner = StreamsRoundPlanner(T, codec=StreamsUserDataCodec(10))
    d = planner.decode_subscription(StreamsMemberCodec(uuid.uuid4()).encode_subscription(11, frozenset(), frozenset()))
    assert (d.version, d.latest_supported_version, d.info) == (11, 11, None)
    out = planner({"a": member("a", d), "b": member("b", sub(10, 10))}, 1, 5)
    info = decode_assignment(out.assignments["a"].user_data)
    assert (info.version, info.commonly_supported_version, out.next_rebalance_at_ms) == (10, 10, 5)


def test_upgrade_from_caps_the_version_and_forces_eager() -> None:
    planner = StreamsRoundPlanner(T, policy=ProtocolPolicy("1.1"))
    out = planner({"a": member("a", sub(11, 11)), "b": member("b", sub(11, 11))}, 1, 0)
    assert out.protocol is EAGER
    assert {decode_assignment(x.user_data).version for x in out.assignments.values()} == {2}
    planner.policy.set_override(COOPERATIVE)
    assert planner({"a": member("a", sub(11, 11))}, 2, 0).protocol is COOPERATIVE


def test_eager_round_still_withholds_tasks_a_cooperative_member_holds() -> None:
    """Toggling to EAGER while members still hold tasks: the hand-off guard keeps one owner."""
    planner = StreamsRoundPlanner(T, policy=ProtocolPolicy())
    planner.policy.set_override(EAGER)
    out = planner({"a": member("a", sub(11, 11, frozenset(T)), gen=1), "b": member("b", sub(11, 11))}, 2, 9)
    assert out.protocol is EAGER and out.next_rebalance_at_ms == 9
    assert not decode_assignment(out.assignments["b"].user_data).active_tasks


def test_shutdown_is_refused_when_upgrade_from_caps_the_version_below_the_error_code() -> None:
    """AssignmentInfo below v4 has no error code: the request must fail, not succeed silently."""
    planner = StreamsRoundPlanner(T, policy=ProtocolPolicy("1.1"))
    with pytest.raises(GroupErrorException, match="SHUTDOWN_REQUESTED") as e:
        planner.request_shutdown()
    assert e.value.error is GroupError.INVALID_REQUEST and not planner.shutdown_requested
    with pytest.raises(GroupErrorException):
        StreamsRoundPlanner(T, codec=StreamsUserDataCodec(3)).request_shutdown()


def test_shutdown_round_at_a_version_without_the_error_code_logs_an_error_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    planner = StreamsRoundPlanner(T)
    planner.request_shutdown()
    with caplog.at_level(logging.ERROR, logger="streams_rt.coordinator.streams_round"):
        out = planner({"a": member("a", sub(3, 3)), "b": member("b", sub(3, 3)), "c": member("c", sub(11, 11))}, 1, 0)
    infos = [decode_assignment(a.user_data) for a in out.assignments.values()]
    assert {(i.version, i.error_code, i.active_tasks) for i in infos} == {(3, AssignorError.NONE, ())}
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "cannot carry SHUTDOWN_REQUESTED" in errors[0].getMessage()
    v4 = planner({"a": member("a", sub(4, 4))}, 2, 0)
    assert decode_assignment(v4.assignments["a"].user_data).error_code == AssignorError.SHUTDOWN_REQUESTED


def test_a_revoked_all_eager_member_gets_its_old_tasks_in_the_same_cooperative_round() -> None:
    """Mixed group, COOPERATIVE round: the EAGER member reports what it ran (stickiness) but holds
    nothing, so its tasks are handed out at once: none revoked, none left unassigned, no follow-up."""
    planner = StreamsRoundPlanner(T)
    a = member("a", sub(11, 11, frozenset(T[:4])), EAGER, gen=1)
    a.revoked_all = True
    b = member("b", sub(11, 11, frozenset(T[4:])), gen=1)
    out = planner({"a": a, "b": b}, 2, now_ms=50)
    assert out.protocol is COOPERATIVE and out.next_rebalance_at_ms is None
    got = {mid: set(decode_assignment(x.user_data).active_tasks) for mid, x in out.assignments.items()}
    assert got["a"] | got["b"] == set(T) and len(got["a"]) == len(got["b"]) == 3
    assert got["a"] < set(T[:4]) and got["b"] > set(T[4:]), "sticky: a keeps 3 of its 4 tasks"
    assert not out.assignments["a"].tasks.revoke and not out.assignments["b"].tasks.revoke


def test_a_broker_outage_keeps_everyones_tasks_and_retries_soon(caplog: pytest.LogCaptureFixture) -> None:
    """The changelogs' end offsets out of reach (Kafka's assignor: "will return previous assignment
    to clients and trigger another rebalance to retry"): one warning line, no traceback, no move."""
    from confluent_kafka import KafkaError

    from streams_rt.kafka.offsets import BrokerUnreachable

    def unreachable() -> dict[TaskId, int]:
        raise BrokerUnreachable("end offsets of 6 partitions", 30, KafkaError(KafkaError._TRANSPORT))

    planner = StreamsRoundPlanner(T, changelog_end_offsets=unreachable)
    a = member("a", sub(11, 11, frozenset(T[:3])), gen=1, tasks=ClientAssignment(active=frozenset(T[:3])))
    b = member("b", sub(11, 11, frozenset(T[3:])), gen=1, tasks=ClientAssignment(active=frozenset(T[3:])))
    with caplog.at_level(logging.WARNING, logger="streams_rt.coordinator.streams_round"):
        out = planner({"a": a, "b": b}, 2, now_ms=1_000)
    assert out.assignments["a"].tasks.active == frozenset(T[:3])
    assert out.assignments["b"].tasks.active == frozenset(T[3:])
    assert out.next_rebalance_at_ms == 1_000 + 5_000
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert "end offsets are out of reach" in warnings[0].getMessage()


def static_return(planner: StreamsRoundPlanner, before: SubscriptionInfo, after: SubscriptionInfo,
                  others: tuple[SubscriptionInfo, ...] = (), protocol: RebalanceProtocol = EAGER) -> str | None:
    old, new = member("old", before, EAGER), member("new", after, protocol)
    members = {"old": old, **{f"o{i}": member(f"o{i}", s, EAGER) for i, s in enumerate(others)}}
    return planner.static_rejoin_change(old, new, members)


def test_a_static_member_back_as_it_was_needs_no_round() -> None:
    """A bounce that keeps the process id, the version spoken and the endpoint costs no round, even on
    a release that reads more (its latest supported version) while another member keeps the group's
    common version where it was."""
    planner, pid = StreamsRoundPlanner(T), uuid.uuid4()
    was = SubscriptionInfo.for_version(10, pid, latest_supported_version=10, user_endpoint="h:1")
    back = SubscriptionInfo.for_version(10, pid, latest_supported_version=11, user_endpoint="h:1")
    assert static_return(planner, was, back, others=(sub(10, 10),)) is None


@pytest.mark.parametrize(("version", "latest", "endpoint", "new_pid", "protocol", "why"), [
    (11, 11, "h:1", False, EAGER, "its metadata version 10 -> 11"),
    (10, 11, "h:1", False, EAGER, "the group's commonly supported version 10 -> 11"),  # the last to read 11
    (10, 10, "h:2", False, EAGER, "its endpoint h:1 -> h:2"),
    (10, 10, "h:1", True, EAGER, "another process id"),
    (10, 10, "h:1", False, COOPERATIVE, "its rebalance protocol EAGER -> COOPERATIVE"),
])
def test_a_static_member_back_changed_needs_a_round(version: int, latest: int, endpoint: str, new_pid: bool,
                                                    protocol: RebalanceProtocol, why: str) -> None:
    planner, pid = StreamsRoundPlanner(T), uuid.uuid4()
    was = SubscriptionInfo.for_version(10, pid, latest_supported_version=10, user_endpoint="h:1")
    back = SubscriptionInfo.for_version(version, uuid.uuid4() if new_pid else pid, latest_supported_version=latest,
                                        user_endpoint=endpoint)
    found = static_return(planner, was, back, (sub(10, 11),), protocol)
    assert found is not None and found.startswith(why), found


def test_a_round_keeps_which_new_actives_their_owner_was_caught_up_on() -> None:
    """KIP-441's rule on the round's own lags (readers wait for such a takeover, refused_batch.py):
    a standby within acceptable.recovery.lag, or a stateless task; kept once the group applies it."""
    ends = {t: 1_000_000 for t in T[:5]}  # T[5] is stateless
    planner = StreamsRoundPlanner(T, changelog_end_offsets=lambda: ends)
    standby = SubscriptionInfo.for_version(11, uuid.uuid4(), latest_supported_version=11,
                                           task_offset_sums={t: 999_990 for t in T[:3]})
    out = planner({"b": member("b", standby, gen=1), "c": member("c", sub(11, 11), gen=1)}, 2, now_ms=0)
    assert planner.caught_up == {}
    assert out.commit is not None
    out.commit()
    given = {mid: a.tasks.active for mid, a in out.assignments.items()}
    assert set(T[:3]) <= given["b"]
    for mid, active in given.items():
        assert planner.caught_up[mid] == active & (set(T[:3]) | {T[5]}), mid
