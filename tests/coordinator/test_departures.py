"""Deferred imbalance resolution (`scheduled.rebalance.max.delay.ms`) in the Streams round."""

from __future__ import annotations

import uuid

import pytest

from streams_rt.assignment.lag import Lags, is_caught_up
from streams_rt.assignment.ownership import NO_OWNER
from streams_rt.coordinator.group import Member, MemberAssignment, RoundOutcome
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from streams_rt.coordinator.user_data import DecodedSubscription
from streams_rt.protocol import RebalanceProtocol, TaskId, decode_assignment
from streams_rt.protocol.subscription import SubscriptionInfo

T0, T1, T2, T3 = (TaskId(0, p) for p in range(4))
ENDS = {t: 1_000_000 for t in (T0, T1, T2, T3)}
A, B = uuid.uuid4(), uuid.uuid4()


def member(mid: str, pid: uuid.UUID, sums: dict[TaskId, int], gen: int) -> Member:
    s = SubscriptionInfo.for_version(11, pid, task_offset_sums=sums)
    m = Member(mid, None, RebalanceProtocol.COOPERATIVE, DecodedSubscription(11, 11, s), 1000, 1000, 0, joined=True)
    m.assignment = MemberAssignment(gen, RebalanceProtocol.COOPERATIVE, b"")
    return m


def applied(out: RoundOutcome) -> RoundOutcome:
    """What the group does when it applies a round: the planner keeps what the round recorded."""
    if out.commit is not None:
        out.commit()
    return out


def active(out: RoundOutcome, mid: str) -> set[TaskId]:
    return set(decode_assignment(out.assignments[mid].user_data).active_tasks)


def run(delay_ms: int) -> tuple[StreamsRoundPlanner, RoundOutcome, dict[str, Member]]:
    planner = StreamsRoundPlanner([T0, T1, T2, T3], changelog_end_offsets=lambda: ENDS,
                                  scheduled_rebalance_max_delay_ms=delay_ms)
    first = applied(planner({
        "a": member("a", A, {T0: -2, T1: -2}, 1),
        "b": member("b", B, {T2: -2, T3: -2, T0: 1_000_000}, 1),  # b has a caught-up copy of T0
    }, 2, now_ms=0))
    assert active(first, "a") == {T0, T1} and active(first, "b") == {T2, T3}
    b_only = {"b": member("b", B, {T2: -2, T3: -2, T0: 1_000_000}, 2)}
    return planner, applied(planner(b_only, 3, now_ms=1_000)), b_only


def test_without_delay_everything_moves_at_once() -> None:
    _, out, _ = run(0)
    assert active(out, "b") == {T0, T1, T2, T3} and out.next_rebalance_at_ms is None


def test_caught_up_task_moves_at_once_and_the_rest_waits_for_the_delay() -> None:
    planner, out, b_only = run(10_000)
    assert active(out, "b") == {T0, T2, T3}  # T1 has no caught-up copy: it waits for a
    assert out.next_rebalance_at_ms == 11_000
    later = applied(planner(b_only, 4, now_ms=11_000))
    assert active(later, "b") == {T0, T1, T2, T3}


def test_departed_client_that_returns_gets_its_tasks() -> None:
    planner, out, _ = run(10_000)
    back = planner({
        "a2": member("a2", A, {T1: 999_990}, -1),  # restarted a, same process id, local state for T1
        "b": member("b", B, {T0: -2, T2: -2, T3: -2}, 3),
    }, 4, now_ms=2_000)
    assert T1 in active(back, "a2")


def test_short_changelogs_are_caught_up_everywhere_so_nothing_waits() -> None:
    """Changelog ends within acceptable.recovery.lag: any client can take the task without restoring
    (lag = end for a client without state), so the departed client's tasks move at once."""
    short = {t: 500 for t in (T0, T1, T2, T3)}
    planner = StreamsRoundPlanner([T0, T1, T2, T3], changelog_end_offsets=lambda: short,
                                  scheduled_rebalance_max_delay_ms=10_000)
    applied(planner({"a": member("a", A, {T0: -2, T1: -2}, 1), "b": member("b", B, {T2: -2, T3: -2}, 1)}, 2, now_ms=0))
    out = planner({"b": member("b", B, {T2: -2, T3: -2}, 2)}, 3, now_ms=1_000)
    assert active(out, "b") == {T0, T1, T2, T3}


@pytest.mark.parametrize(
    ("end", "offset_sum", "caught_up"),
    [
        (None, None, True),  # stateless: runs anywhere
        (500, None, True),  # no state, but the whole changelog is within the acceptable lag
        (20_000, None, False),
        (20_000, -2, True),  # running active
        (20_000, -3, False),  # holds state of unknown freshness
        (20_000, 15_000, True),
        (20_000, 5_000, False),
        (20_000, 25_000, False),  # ahead of the end: counts as holding nothing (Kafka's rule)
        (500, 25_000, True),
    ],
)
def test_the_planner_and_the_assignor_share_one_caught_up_rule(end: int | None, offset_sum: int | None,
                                                                 caught_up: bool) -> None:
    assert is_caught_up(end, offset_sum, 10_000) is caught_up
    if end is not None:
        tasks = [T0]
        sums = [{} if offset_sum is None else {T0: offset_sum}, {}]
        owner = [1 if offset_sum == -2 else NO_OWNER]  # the assignor counts a running task via ownership
        index = {t: i for i, t in enumerate(tasks)}
        lags = Lags(tasks, [end], sums, [frozenset(), frozenset()], index, owner, [[], []], 10_000)
        assert lags.caught_up(0, 1 if offset_sum == -2 else 0) is caught_up
