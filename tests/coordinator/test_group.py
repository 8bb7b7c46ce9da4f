"""Unit tests of the pure group state machine: explicit `now_ms`, no threads, no sockets."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from streams_rt.coordinator.group import (
    Group,
    GroupState,
    Member,
    MemberAssignment,
    PendingRound,
    RoundOutcome,
    SupersededCheck,
    never_superseded,
)
from streams_rt.coordinator.group_record import GroupRecord, MemberRecord
from streams_rt.protocol import RebalanceProtocol
from streams_rt.rpc.errors import GroupError, GroupErrorException

SESSION, REBALANCE = 1000, 3000
COOPERATIVE = RebalanceProtocol.COOPERATIVE


class RecordingAssigner:
    """Gives every member its own id as user data; remembers who took part in each round."""

    def __init__(self) -> None:
        self.rounds: list[tuple[int, list[str]]] = []
        self.next_rebalance_at_ms: int | None = None

    def __call__(self, members: Mapping[str, Member], generation: int, now_ms: int,
                 check: SupersededCheck = never_superseded) -> RoundOutcome:
        self.rounds.append((generation, sorted(members)))
        return RoundOutcome(
            {mid: MemberAssignment(generation, COOPERATIVE, mid.encode()) for mid in members},
            COOPERATIVE,
            self.next_rebalance_at_ms,
        )


class Observer:
    def __init__(self) -> None:
        self.completed: list[tuple[int, int]] = []
        self.failed: list[int] = []

    def rebalance_completed(self, generation: int, latency_ms: int, now_ms: int) -> None:
        self.completed.append((generation, latency_ms))

    def rebalance_failed(self, generation: int, now_ms: int) -> None:
        self.failed.append(generation)


@pytest.fixture
def assigner() -> RecordingAssigner:
    return RecordingAssigner()


@pytest.fixture
def observer() -> Observer:
    return Observer()


@pytest.fixture
def group(assigner: RecordingAssigner, observer: Observer) -> Group:
    counter = iter(range(1000))
    return Group("app", assigner, observer=observer, new_member_id=lambda inst: f"{inst or 'm'}-{next(counter)}")


def join(group: Group, now: int, member_id: str = "", instance: str | None = None) -> str:
    return group.join(
        member_id=member_id, instance_id=instance, protocol=COOPERATIVE, subscription=None,
        session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE, now_ms=now,
    )


def stable_group_of(group: Group, n: int, now: int = 0) -> list[str]:
    """n members that all joined and fetched generation group.generation."""
    ids = [join(group, now)]
    assert group.sync(member_id=ids[0], instance_id=None, known_generation=-1, now_ms=now) is not None
    for _ in range(n - 1):
        ids.append(join(group, now))
        for mid in ids[:-1]:
            with pytest.raises(GroupErrorException):
                group.heartbeat(member_id=mid, instance_id=None, generation=group.generation, now_ms=now)
            join(group, now, mid)
        for mid in ids:
            group.sync(member_id=mid, instance_id=None, known_generation=-1, now_ms=now)
    assert group.state is GroupState.STABLE
    return ids


def test_first_member_forms_generation_one(group: Group) -> None:
    mid = join(group, 0)
    assert group.state is GroupState.STABLE and group.generation == 1
    a = group.sync(member_id=mid, instance_id=None, known_generation=-1, now_ms=5)
    assert a is not None and a.generation == 1 and a.user_data == mid.encode()
    group.heartbeat(member_id=mid, instance_id=None, generation=1, now_ms=10)


def test_new_member_makes_existing_members_rejoin_and_generation_increase(group: Group,
                                                                          assigner: RecordingAssigner) -> None:
    a = join(group, 0)
    b = join(group, 10)
    assert group.state is GroupState.PREPARING_REBALANCE
    assert group.sync(member_id=b, instance_id=None, known_generation=-1, now_ms=10) is None  # waits for a
    with pytest.raises(GroupErrorException) as e:
        group.heartbeat(member_id=a, instance_id=None, generation=1, now_ms=20)
    assert e.value.error is GroupError.REBALANCE_IN_PROGRESS and e.value.retriable
    join(group, 20, a)
    assert group.state is GroupState.STABLE and group.generation == 2
    assert assigner.rounds[-1] == (2, sorted([a, b]))


def test_stale_generation_is_refused_with_retriable_error(group: Group) -> None:
    a, b = stable_group_of(group, 2)
    with pytest.raises(GroupErrorException) as e:
        group.heartbeat(member_id=a, instance_id=None, generation=group.generation - 1, now_ms=1)
    assert e.value.error is GroupError.ILLEGAL_GENERATION and e.value.retriable
    with pytest.raises(GroupErrorException) as e:
        group.check_generation(member_id=b, instance_id=None, generation=group.generation + 1)
    assert e.value.error is GroupError.ILLEGAL_GENERATION


def test_unknown_member_is_refused(group: Group) -> None:
    stable_group_of(group, 1)
    with pytest.raises(GroupErrorException) as e:
        group.heartbeat(member_id="nobody", instance_id=None, generation=1, now_ms=1)
    assert e.value.error is GroupError.UNKNOWN_MEMBER_ID


def test_session_timeout_removes_silent_member_and_rebalances(group: Group) -> None:
    a, b = stable_group_of(group, 2)
    gen = group.generation
    group.heartbeat(member_id=a, instance_id=None, generation=gen, now_ms=900)
    group.tick(900 + 1)  # b last seen at 0: 901 ms ago, within 1000
    assert b in group.members
    group.tick(1001)
    assert b not in group.members and group.state is GroupState.PREPARING_REBALANCE
    join(group, 1002, a)
    assert group.generation == gen + 1 and list(group.members) == [a]


def test_rebalance_timeout_removes_member_that_does_not_rejoin(group: Group, observer: Observer) -> None:
    a, b = stable_group_of(group, 2)
    c = join(group, 100)
    join(group, 100, a)
    # b keeps heartbeating (alive) but never rejoins
    for t in range(200, 3100, 200):
        with pytest.raises(GroupErrorException):
            group.heartbeat(member_id=b, instance_id=None, generation=group.generation, now_ms=t)
        group.sync(member_id=a, instance_id=None, known_generation=99, now_ms=t)
        group.sync(member_id=c, instance_id=None, known_generation=99, now_ms=t)
        group.tick(t)
    group.tick(100 + REBALANCE)
    assert sorted(group.members) == sorted([a, c]) and group.state is GroupState.STABLE
    assert observer.failed


def test_leave_rebalances_and_last_leave_empties(group: Group) -> None:
    a, b = stable_group_of(group, 2)
    group.leave(member_id=b, instance_id=None, now_ms=5)
    assert group.state is GroupState.PREPARING_REBALANCE
    join(group, 6, a)
    group.leave(member_id=a, instance_id=None, now_ms=7)
    assert group.state is GroupState.EMPTY and not group.members


def test_static_member_rejoin_within_session_keeps_assignment_without_rebalance(
    group: Group, assigner: RecordingAssigner
) -> None:
    a = join(group, 0, instance="host-a")
    group.sync(member_id=a, instance_id="host-a", known_generation=-1, now_ms=0)
    b = join(group, 0, instance="host-b")
    join(group, 0, a, instance="host-a")
    gen, rounds = group.generation, len(assigner.rounds)
    old = group.members[b].assignment
    b2 = join(group, 500, instance="host-b")  # restarted process, new member id
    assert group.state is GroupState.STABLE and group.generation == gen and len(assigner.rounds) == rounds
    got = group.sync(member_id=b2, instance_id="host-b", known_generation=-1, now_ms=501)
    assert got == old
    with pytest.raises(GroupErrorException) as e:  # the old incarnation is fenced
        group.heartbeat(member_id=b, instance_id="host-b", generation=gen, now_ms=502)
    assert e.value.error is GroupError.FENCED_INSTANCE_ID and not e.value.retriable


def test_a_static_member_back_with_another_protocol_waits_for_a_round(
    group: Group, assigner: RecordingAssigner
) -> None:
    """What its assignment depends on changed (here its protocol): the new process holds nothing and
    gets its tasks from a round, with everyone; the old incarnation is fenced as before."""
    a = join(group, 0, instance="host-a")
    group.sync(member_id=a, instance_id="host-a", known_generation=-1, now_ms=0)
    b = join(group, 0, instance="host-b")
    join(group, 0, a, instance="host-a")
    gen, rounds = group.generation, len(assigner.rounds)
    b2 = group.join(member_id="", instance_id="host-b", protocol=RebalanceProtocol.EAGER, subscription=None,
                    session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE, now_ms=500)
    assert group.state is GroupState.PREPARING_REBALANCE and len(assigner.rounds) == rounds
    assert group.sync(member_id=b2, instance_id="host-b", known_generation=-1, now_ms=501) is None
    with pytest.raises(GroupErrorException) as e:
        group.heartbeat(member_id=b, instance_id="host-b", generation=gen, now_ms=502)
    assert e.value.error is GroupError.FENCED_INSTANCE_ID
    join(group, 503, a, instance="host-a")
    assert group.generation == gen + 1 and assigner.rounds[-1] == (gen + 1, sorted([a, b2]))
    got = group.sync(member_id=b2, instance_id="host-b", known_generation=-1, now_ms=504)
    assert got is not None and got.generation == gen + 1


def test_which_static_returns_need_a_round_is_the_groups_to_say(assigner: RecordingAssigner) -> None:
    """The check sees the member it replaces, the returning one and the group; None keeps the old
    assignment without a round."""
    seen: list[tuple[str, str, list[str]]] = []

    def check(old: Member, new: Member, members: Mapping[str, Member]) -> str | None:
        seen.append((old.member_id, new.member_id, sorted(members)))
        return None if new.subscription == old.subscription else "another subscription"

    counter = iter(range(100))
    group = Group("app", assigner, new_member_id=lambda inst: f"{inst}-{next(counter)}", static_rejoin_change=check)

    def static_join(subscription: str, now: int) -> str:
        return group.join(member_id="", instance_id="h", protocol=COOPERATIVE, subscription=subscription,
                          session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE, now_ms=now)

    first = static_join("v1", 0)
    group.sync(member_id=first, instance_id="h", known_generation=-1, now_ms=0)
    second = static_join("v1", 10)
    assert group.state is GroupState.STABLE and seen == [(first, second, [first])]
    third = static_join("v2", 20)
    assert group.state is GroupState.STABLE and group.generation == 2  # the single member's round ran at once
    got = group.sync(member_id=third, instance_id="h", known_generation=-1, now_ms=21)
    assert got is not None and got.generation == 2


def test_scheduled_rebalance_starts_a_round(group: Group, assigner: RecordingAssigner) -> None:
    assigner.next_rebalance_at_ms = 500
    (a,) = stable_group_of(group, 1)
    group.tick(499)
    assert group.state is GroupState.STABLE
    group.tick(500)
    assert group.state is GroupState.PREPARING_REBALANCE


def test_round_latency_is_reported_when_last_member_fetched(group: Group, observer: Observer) -> None:
    a = join(group, 0)
    group.sync(member_id=a, instance_id=None, known_generation=-1, now_ms=3)
    b = join(group, 10)
    join(group, 15, a)
    group.sync(member_id=a, instance_id=None, known_generation=1, now_ms=20)
    group.sync(member_id=b, instance_id=None, known_generation=-1, now_ms=42)
    assert observer.completed == [(1, 3), (2, 32)]


def test_invalid_transition_is_an_assertion() -> None:
    g = Group("app", RecordingAssigner())
    with pytest.raises(AssertionError):
        g._transition(GroupState.STABLE)


def test_every_generation_is_saved_with_its_members_before_anyone_can_fetch_it(assigner: RecordingAssigner) -> None:
    g = Group("app", assigner, persistent=True, new_member_id=lambda inst: f"{inst}-1")
    a = join(g, 0, instance="host-a")
    assert g.state is GroupState.STABLE and g.generation == 1 and g.saving
    assert g.sync(member_id=a, instance_id="host-a", known_generation=-1, now_ms=1) is None  # not saved yet
    pending = g.unsaved()
    assert pending is not None and g.has_unsaved
    changes, record = pending
    assert (record.generation, [m.member_id for m in record.members]) == (1, [a])
    assert record.members[0].instance_id == "host-a" and record.members[0].generation == 1
    g.saved(changes, record.generation)
    assert not g.saving and g.unsaved() is None and not g.has_unsaved
    got = g.sync(member_id=a, instance_id="host-a", known_generation=-1, now_ms=2)
    assert got is not None and got.generation == 1


def test_a_round_formed_while_an_older_record_is_being_saved_waits_for_its_own_save(
    assigner: RecordingAssigner,
) -> None:
    """The saver reports the change count it saved: a save of generation 1 must not release 2."""
    counter = iter(range(10))
    g = Group("app", assigner, persistent=True, new_member_id=lambda inst: f"m-{next(counter)}")
    a = join(g, 0)
    first = g.unsaved()
    assert first is not None
    b = join(g, 1)  # a new round: generation 2 forms once a rejoins
    join(g, 2, a)
    assert g.generation == 2
    g.saved(first[0], first[1].generation)
    assert g.saving and g.unsaved() is not None and g.has_unsaved
    assert g.sync(member_id=b, instance_id=None, known_generation=-1, now_ms=3) is None


def restored_group(assigner: RecordingAssigner) -> Group:
    record = GroupRecord(7, COOPERATIVE, (
        MemberRecord("a", None, COOPERATIVE, 1, SESSION, REBALANCE, 7, ("0_0",), ()),
        MemberRecord("b", "host-b", COOPERATIVE, 1, SESSION, REBALANCE, 7, ("0_1",), ("0_0",)),
    ))
    return Group("app", assigner, restored=record, now_ms=100)


def test_restored_members_are_recognised_and_must_rejoin(assigner: RecordingAssigner) -> None:
    g = restored_group(assigner)
    assert g.state is GroupState.PREPARING_REBALANCE and g.generation == 7
    with pytest.raises(GroupErrorException) as e:
        g.heartbeat(member_id="a", instance_id=None, generation=7, now_ms=150)
    assert e.value.error is GroupError.REBALANCE_IN_PROGRESS  # not UNKNOWN_MEMBER_ID: a keeps its tasks
    with pytest.raises(GroupErrorException) as e:
        g.sync(member_id="b", instance_id="host-b", known_generation=7, now_ms=150)
    assert e.value.error is GroupError.REBALANCE_IN_PROGRESS
    join(g, 200, "a")
    join(g, 200, "b", instance="host-b")
    assert g.generation == 8 and assigner.rounds[-1] == (8, ["a", "b"])


def test_restored_member_that_never_comes_back_expires(assigner: RecordingAssigner) -> None:
    g = restored_group(assigner)
    join(g, 200, "a")
    g.tick(100 + SESSION + 1)
    assert list(g.members) == ["a"] and g.generation == 8


def test_restored_static_member_restarting_gets_a_fresh_assignment_not_the_restored_one(
    assigner: RecordingAssigner,
) -> None:
    g = restored_group(assigner)
    b2 = join(g, 150, instance="host-b")
    assert g.sync(member_id=b2, instance_id="host-b", known_generation=-1, now_ms=150) is None
    join(g, 160, "a")
    got = g.sync(member_id=b2, instance_id="host-b", known_generation=-1, now_ms=170)
    assert got is not None and got.generation == 8 and not got.restored


def test_initial_rebalance_delay_holds_the_first_round(assigner: RecordingAssigner) -> None:
    g = Group("app", assigner, hold_rounds_until_ms=100)
    join(g, 0)
    g.tick(99)
    assert g.state is GroupState.PREPARING_REBALANCE
    g.tick(100)
    assert g.state is GroupState.STABLE and g.generation == 1


def waiting(g: Group, members: list[str], now: int) -> None:
    """Joined members long-poll for their assignment (sync), which keeps their sessions."""
    for mid in members:
        assert g.sync(member_id=mid, instance_id=None, known_generation=-1, now_ms=now) is None
    g.tick(now)


def test_an_empty_groups_first_round_waits_for_more_members(assigner: RecordingAssigner) -> None:
    """group.initial.rebalance.delay.ms, as Kafka's broker applies it: hosts that start together share
    the first round; each newcomer extends the hold, at most a rebalance timeout from the first."""
    g = Group("app", assigner, initial_rebalance_delay_ms=600)
    a = join(g, 0)
    waiting(g, [a], 599)
    b = join(g, 599)  # within the hold: it extends to 1199
    waiting(g, [a, b], 1198)
    assert g.state is GroupState.PREPARING_REBALANCE and not assigner.rounds
    g.tick(1199)
    assert g.state is GroupState.STABLE and assigner.rounds == [(1, sorted([a, b]))]
    c = join(g, 1500)  # a group with members rebalances as ever: once everyone rejoined
    join(g, 1500, a)
    join(g, 1500, b)
    assert g.state is GroupState.STABLE and assigner.rounds[1:] == [(2, sorted([a, b, c]))]


def test_newcomers_hold_the_first_round_at_most_a_rebalance_timeout(assigner: RecordingAssigner) -> None:
    g = Group("app", assigner, initial_rebalance_delay_ms=600)
    members: list[str] = []
    for now in range(0, 2 * REBALANCE, 400):  # a newcomer every 400 ms, for longer than the rebalance timeout
        waiting(g, members, now)
        if g.state is GroupState.STABLE:
            break
        members.append(join(g, now))
    assert now == 3200 and assigner.rounds == [(1, sorted(members))]  # the first tick past 3000, the cap
    assert len(members) == 8  # those that joined at 0, 400, ... 2800


def test_rejoin_with_a_stale_generation_is_refused(group: Group) -> None:
    a, _ = stable_group_of(group, 2)
    gen = group.generation
    with pytest.raises(GroupErrorException) as e:
        group.join(member_id=a, instance_id=None, protocol=COOPERATIVE, subscription=None, session_timeout_ms=SESSION,
                   rebalance_timeout_ms=REBALANCE, now_ms=1, generation=gen - 1)
    assert e.value.error is GroupError.ILLEGAL_GENERATION and e.value.retriable
    group.join(member_id=a, instance_id=None, protocol=COOPERATIVE, subscription=None, session_timeout_ms=SESSION,
               rebalance_timeout_ms=REBALANCE, now_ms=1, generation=gen)
    assert group.state is GroupState.PREPARING_REBALANCE


def test_a_member_that_leaves_is_dropped_from_the_saved_record(assigner: RecordingAssigner) -> None:
    counter = iter(range(10))
    g = Group("app", assigner, persistent=True, new_member_id=lambda inst: f"m-{next(counter)}")
    a = join(g, 0)
    b = join(g, 1)
    join(g, 2, a)
    g.leave(member_id=b, instance_id=None, now_ms=3)
    pending = g.unsaved()
    assert pending is not None
    assert [m.member_id for m in pending[1].members] == [a] and pending[1].generation == 2


def test_a_member_that_could_not_fetch_a_superseded_generation_rejoins_with_the_one_it_holds(
    assigner: RecordingAssigner,
) -> None:
    """Generation 2 waits for its save when b leaves: a never fetched 2 and still holds 1, which
    the next round must accept (not ILLEGAL_GENERATION, which would cost a all its tasks)."""
    counter = iter(range(10))
    g = Group("app", assigner, persistent=True, new_member_id=lambda inst: f"m-{next(counter)}")
    a = join(g, 0)
    pending = g.unsaved()
    assert pending is not None
    g.saved(pending[0], pending[1].generation)
    assert g.sync(member_id=a, instance_id=None, known_generation=-1, now_ms=0) is not None
    b = join(g, 1)
    join(g, 2, a)  # generation 2 forms and waits for its save
    assert g.generation == 2 and g.saving
    g.leave(member_id=b, instance_id=None, now_ms=3)
    g.join(member_id=a, instance_id=None, protocol=COOPERATIVE, subscription=None, session_timeout_ms=SESSION,
           rebalance_timeout_ms=REBALANCE, now_ms=4, generation=1)
    assert g.generation == 3


# ---- rounds computed off the lock: the group hands out a frozen round and applies it if current ----


def driven_group() -> Group:
    """A group whose rounds a driver computes (no assigner): as the server runs it."""
    counter = iter(range(1000))
    return Group("app", None, observer=Observer(), new_member_id=lambda inst: f"{inst or 'm'}-{next(counter)}")


def second_round(g: Group, assigner: RecordingAssigner) -> tuple[str, str, PendingRound]:
    """a holds generation 1; b joins and a rejoins: generation 2's round is handed out."""
    a = join(g, 0)
    first = g.pending_round()
    assert first is not None
    g.complete_round(first, assigner(first.members, 1, 0), now_ms=0)
    g.sync(member_id=a, instance_id=None, known_generation=-1, now_ms=0)
    b = join(g, 1)
    join(g, 1, a)
    pending = g.pending_round()
    assert pending is not None and sorted(pending.members) == sorted([a, b])
    return a, b, pending


def test_a_round_waits_for_its_outcome(assigner: RecordingAssigner) -> None:
    g = driven_group()
    a = join(g, 0)
    pending = g.pending_round()
    assert g.state is GroupState.COMPLETING_REBALANCE and pending is not None
    assert pending.generation == 1 and list(pending.members) == [a] and g.generation == 0
    assert g.sync(member_id=a, instance_id=None, known_generation=-1, now_ms=1) is None  # not ready yet
    assert g.complete_round(pending, assigner(pending.members, pending.generation, pending.now_ms), now_ms=2)
    assert g.state is GroupState.STABLE and g.generation == 1 and g.pending_round() is None
    got = g.sync(member_id=a, instance_id=None, known_generation=-1, now_ms=3)
    assert got is not None and got.generation == 1


def test_the_round_is_frozen_when_handed_out() -> None:
    g = driven_group()
    a = join(g, 0)
    pending = g.pending_round()
    assert pending is not None
    g.members[a].capacity = 99  # a change the group makes later must not reach the round in flight
    assert pending.members[a].capacity == 1


@pytest.mark.parametrize("change", ["new member", "rejoin", "leave", "session expiry", "request"])
def test_a_change_while_the_round_is_computed_supersedes_it(assigner: RecordingAssigner, change: str) -> None:
    g = driven_group()
    a, b, stale = second_round(g, assigner)
    with pytest.raises(GroupErrorException) as e:  # heartbeats are answered while the round is computed
        g.heartbeat(member_id=a, instance_id=None, generation=1, now_ms=1)
    assert e.value.error is GroupError.REBALANCE_IN_PROGRESS
    if change == "new member":
        join(g, 2)
    elif change == "rejoin":
        join(g, 2, b)
    elif change == "leave":
        g.leave(member_id=b, instance_id=None, now_ms=2)
    elif change == "session expiry":
        # a and b wait in sync; only a keeps asking, so only b's session lapses
        g.sync(member_id=a, instance_id=None, known_generation=1, now_ms=SESSION)
        g.tick(SESSION + 2)
    else:
        g.request_rebalance(2, "the assigner's settings changed")
    assert not g.complete_round(stale, assigner(stale.members, 2, 1), now_ms=3)
    assert g.generation == 1, "the superseded outcome was dropped"
    current = g.pending_round()
    assert current is not None and current.number > stale.number and current.generation == 2
    assert g.complete_round(current, assigner(current.members, 2, 3), now_ms=4)
    assert g.generation == 2 and sorted(g.members) == sorted(current.members)


def test_the_assigners_state_is_kept_only_when_its_round_is_applied(assigner: RecordingAssigner) -> None:
    g = driven_group()
    kept: list[int] = []
    a = join(g, 0)
    stale = g.pending_round()
    assert stale is not None
    join(g, 1)  # supersedes
    outcome = RoundOutcome({a: MemberAssignment(1, COOPERATIVE, b"")}, COOPERATIVE, commit=lambda: kept.append(1))
    assert not g.complete_round(stale, outcome, now_ms=2) and not kept
    current = g.pending_round()
    assert current is not None
    base = assigner(current.members, 1, 2)
    assert g.complete_round(current, RoundOutcome(base.assignments, COOPERATIVE, commit=lambda: kept.append(2)), 3)
    assert kept == [2]


def test_everyone_leaving_while_a_round_is_computed_empties_the_group() -> None:
    g = driven_group()
    a = join(g, 0)
    pending = g.pending_round()
    assert pending is not None
    g.leave(member_id=a, instance_id=None, now_ms=1)
    assert g.state is GroupState.EMPTY and g.pending_round() is None
    assert not g.complete_round(pending, RoundOutcome({}, COOPERATIVE), now_ms=2)


def test_a_static_member_replaced_while_the_round_is_computed_joins_the_next(assigner: RecordingAssigner) -> None:
    g = driven_group()
    a = join(g, 0, instance="host-a")
    stale = g.pending_round()
    assert stale is not None
    a2 = join(g, 1, instance="host-a")
    current = g.pending_round()
    assert current is not None and list(current.members) == [a2] and a not in g.members
    assert not g.complete_round(stale, assigner(stale.members, 1, 0), now_ms=2)
    assert g.complete_round(current, assigner(current.members, 1, 1), now_ms=2)


def test_a_member_that_fetches_a_failed_assignment_leaves_the_group(assigner: RecordingAssigner) -> None:
    """It stops on the error: the others' next round does not wait out its timeouts."""
    g = driven_group()
    a, b, pending = second_round(g, assigner)
    ok = assigner(pending.members, 2, 1)
    failed = MemberAssignment(2, COOPERATIVE, b"", assignor_error=3, message="cannot write it")
    g.complete_round(pending, RoundOutcome({a: ok.assignments[a], b: failed}, COOPERATIVE), now_ms=2)
    got = g.sync(member_id=b, instance_id=None, known_generation=-1, now_ms=3)
    assert got is not None and got.assignor_error == 3
    assert list(g.members) == [a] and g.state is GroupState.PREPARING_REBALANCE


def test_a_failed_assignor_fails_the_round_for_everyone_and_is_counted() -> None:
    def broken(members: Mapping[str, Member], generation: int, now_ms: int,
               check: SupersededCheck = never_superseded) -> RoundOutcome:
        raise RuntimeError("bug with a long message " + "x" * 10_000)

    observer = Observer()
    g = Group("app", broken, observer=observer)
    a = join(g, 0)
    got = g.sync(member_id=a, instance_id=None, known_generation=-1, now_ms=1)
    assert got is not None and got.assignor_error == 3 and "RuntimeError" in got.message and len(got.message) < 200
    assert observer.failed == [1]


def test_an_unreachable_member_is_removed_at_once_and_a_round_starts(
    group: Group, assigner: RecordingAssigner, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = stable_group_of(group, 2)
    gen = group.generation
    caplog.set_level("INFO", logger="streams_rt.coordinator.group")
    assert group.remove_unreachable(b, 10, "its host at grpc://h:1 refuses connections (reported by a reader)")
    assert b not in group.members and group.state is GroupState.PREPARING_REBALANCE  # long before SESSION
    assert f"member {b} removed: its host at grpc://h:1 refuses connections (reported by a reader)" in caplog.text
    join(group, 11, a)
    assert group.generation == gen + 1 and assigner.rounds[-1] == (gen + 1, [a])


def test_a_member_removed_as_unreachable_while_alive_rejoins_as_a_new_member(group: Group) -> None:
    a, b = stable_group_of(group, 2)
    assert group.remove_unreachable(b, 10, "refuses connections")
    with pytest.raises(GroupErrorException) as e:
        group.heartbeat(member_id=b, instance_id=None, generation=group.generation, now_ms=20)
    assert e.value.error is GroupError.UNKNOWN_MEMBER_ID and e.value.retriable
    b2 = join(group, 21)
    join(group, 22, a)
    assert sorted(group.members) == sorted([a, b2]) and group.state is GroupState.STABLE


def test_a_static_member_is_not_removed_as_unreachable(group: Group, caplog: pytest.LogCaptureFixture) -> None:
    a = join(group, 0, instance="host-a")
    group.sync(member_id=a, instance_id="host-a", known_generation=-1, now_ms=0)
    gen = group.generation
    caplog.set_level("INFO", logger="streams_rt.coordinator.group")
    assert not group.remove_unreachable(a, 10, "refuses connections")
    assert a in group.members and group.state is GroupState.STABLE and group.generation == gen
    assert "static member" in caplog.text and "only its session timeout" in caplog.text
    group.tick(SESSION + 1)  # its session still expires as usual
    assert a not in group.members


def test_an_unknown_or_last_member_removed_as_unreachable(group: Group) -> None:
    (a,) = stable_group_of(group, 1)
    assert not group.remove_unreachable("nobody", 5, "refuses connections")
    assert group.state is GroupState.STABLE
    assert group.remove_unreachable(a, 6, "refuses connections")
    assert group.state is GroupState.EMPTY and not group.members
