"""Batch planning, pure (streams_rt/runtime/planning.py): which tasks get a batch and how far their
inputs advance. A task with new records always gets one; one without gets one only when its owner
says it sat out a batch (it is behind the source's offsets) or, on a restarted driver's first plan,
that the batch is the one it applied last (so its host replays it)."""

from __future__ import annotations

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.tasks import TaskProgress, TaskStatus
from streams_rt.runtime.planning import RUNNING, latest_positions, needs_batch, plan, reported_behind

A, B = TopicPartition("in", 0), TopicPartition("in", 1)
T0, T1 = TaskId(0, 0), TaskId(0, 1)


def status(task: TaskId, tp: TopicPartition, position: int, phase: str = RUNNING, endpoint: str | None = "h:1",
           caught_up: bool = False) -> TaskStatus:
    return TaskStatus(task, "m", endpoint, phase, {tp: position}, (tp,), caught_up)


def test_only_tasks_with_new_records_or_catching_up_are_planned() -> None:
    statuses = {T0: status(T0, A, 10), T1: status(T1, B, 7)}
    start, end = {A: 10, B: 7}, {A: 12, B: 7}
    assert [b.task for b in plan(start, end, statuses, 3)] == [T0]
    batches = plan(start, end, statuses, 3, catch_up=frozenset({T1}))
    assert [(b.task, dict(b.ranges)) for b in batches] == [(T0, {A: (10, 12)}), (T1, {B: (7, 7)})]


def test_a_running_task_reported_behind_the_start_is_a_candidate() -> None:
    statuses = {T0: status(T0, A, 10), T1: status(T1, B, 4),
                TaskId(0, 2): status(TaskId(0, 2), TopicPartition("in", 2), 1, phase="RESTORING")}
    start = {A: 10, B: 7, TopicPartition("in", 2): 5}
    assert reported_behind(start, statuses) == {T1}
    assert reported_behind(start, {T1: status(T1, B, 4, endpoint=None)}) == set()


def test_a_task_needs_a_batch_when_behind_or_when_the_batch_is_its_last() -> None:
    start = {A: 10}
    assert needs_batch(TaskProgress({A: 8}, 2), start, None)
    assert not needs_batch(TaskProgress({A: 10}, 2), start, None)
    assert needs_batch(TaskProgress({A: 10}, 2), start, 2)  # a re-run: its host replays it
    assert not needs_batch(TaskProgress({A: 10}, None), start, 2)


def test_running_tasks_and_caught_up_takeovers_advance_others_stay() -> None:
    """A standby being promoted (its owner caught up on it) runs within a moment: its new records are
    planned, and the reader waits for it. A task its new owner must restore stays where it is."""
    start, ends = {A: 10, B: 7}, {A: 50, B: 40}
    for phase in ("CREATED", "RESTORING"):
        taking_over = {T0: status(T0, A, 10), T1: status(T1, B, 7, phase=phase, caught_up=True)}
        assert latest_positions(start, taking_over, ends, None) == {A: 50, B: 40}
        restoring = {T0: status(T0, A, 10), T1: status(T1, B, 7, phase=phase)}
        assert latest_positions(start, restoring, ends, None) == {A: 50, B: 7}
        no_endpoint = {T1: status(T1, B, 7, phase=phase, endpoint=None, caught_up=True)}
        assert latest_positions(start, no_endpoint, ends, None) == {A: 10, B: 7}
    assert latest_positions(start, {T0: status(T0, A, 10)}, ends, 15) == {A: 25, B: 7}  # the cap per task
