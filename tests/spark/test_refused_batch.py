"""A reader's next step when a task's batch is refused while the task moves, pure
(streams_rt/spark/refused_batch.py): follow the owner, wait a moment, or sit the micro-batch out."""

from __future__ import annotations

import pytest

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.tasks import ASSIGNED, UNASSIGNED, TaskStatus
from streams_rt.spark.refused_batch import TAKEOVER_WAIT_S, Next, Step, after_refusal

TASK, TP = TaskId(0, 1), TopicPartition("in", 1)
OLD, NEW = "grpc://old:1", "grpc://new:2"


def status(phase: str, endpoint: str | None, caught_up: bool = False) -> TaskStatus:
    return TaskStatus(TASK, "m", endpoint, phase, {}, (TP,), caught_up)


@pytest.mark.parametrize("phase", ["CREATED", "RESTORING"])
def test_a_caught_up_owner_taking_the_task_over_is_waited_for_a_bounded_time(phase: str) -> None:
    taking_over = status(phase, NEW, caught_up=True)
    for code in ("UNREACHABLE", "NOT_OWNER", "RESTORING"):
        assert after_refusal(code, taking_over, OLD, 0.0) == Step(Next.WAIT, NEW)
    assert after_refusal("RESTORING", taking_over, NEW, TAKEOVER_WAIT_S - 0.1) == Step(Next.WAIT, NEW)
    assert after_refusal("RESTORING", taking_over, NEW, TAKEOVER_WAIT_S).next is Next.SIT_OUT


@pytest.mark.parametrize("phase", ["CREATED", "RESTORING"])
def test_an_owner_that_must_restore_the_task_is_sat_out_at_once(phase: str) -> None:
    assert after_refusal("UNREACHABLE", status(phase, NEW), OLD, 0.0).next is Next.SIT_OUT
    assert after_refusal("RESTORING", status(phase, NEW), NEW, 0.0).next is Next.SIT_OUT
    # caught up, but its owner has not said where it serves batches: nothing to wait at
    assert after_refusal("NOT_OWNER", status(phase, None, caught_up=True), OLD, 0.0).next is Next.SIT_OUT


@pytest.mark.parametrize("phase", [UNASSIGNED, ASSIGNED])
def test_a_round_giving_the_task_to_a_member_is_waited_for_a_bounded_time(phase: str) -> None:
    """No owner yet (the dead host's member removed, the round under way), or an owner that has not
    reported for the new generation: the next status names one."""
    for code in ("UNREACHABLE", "NOT_OWNER"):
        assert after_refusal(code, status(phase, None), OLD, 0.0) == Step(Next.WAIT, "")
    assert after_refusal("NOT_OWNER", status(phase, None), OLD, TAKEOVER_WAIT_S).next is Next.SIT_OUT


def test_an_unreachable_host_the_coordinator_still_names_is_waited_for_a_bounded_time() -> None:
    """The reader reported it; the coordinator probes it and removes it if it is dead."""
    still_named = status("RUNNING", OLD)
    assert after_refusal("UNREACHABLE", still_named, OLD, 0.0) == Step(Next.WAIT, OLD)
    assert after_refusal("UNREACHABLE", still_named, OLD, TAKEOVER_WAIT_S).next is Next.SIT_OUT


def test_a_task_running_elsewhere_is_followed_there() -> None:
    for code in ("UNREACHABLE", "NOT_OWNER", "RESTORING", "OUT_OF_ORDER"):
        assert after_refusal(code, status("RUNNING", NEW), OLD, 0.0) == Step(Next.FOLLOW, NEW)


def test_a_refusal_not_of_a_move_asks_the_owner_again() -> None:
    """Other retriable refusals (the source retries them until batch.retry.timeout.ms)."""
    assert after_refusal("OUT_OF_ORDER", status("RUNNING", OLD), OLD, 10 * TAKEOVER_WAIT_S) == Step(Next.FOLLOW, OLD)


def test_a_task_unknown_to_the_coordinator_or_revoked_and_not_moved_yet_is_sat_out() -> None:
    assert after_refusal("NOT_OWNER", None, OLD, 0.0).next is Next.SIT_OUT
    assert after_refusal("NOT_OWNER", status("RUNNING", OLD), OLD, 0.0).next is Next.SIT_OUT  # revoked, not yet moved
