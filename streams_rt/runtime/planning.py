"""Batch planning, pure: which tasks get work in the next batch and which offset ranges.

Only RUNNING tasks advance, and tasks an owner caught up on them is taking over (a standby being
promoted: it runs them within a moment); a task that is restoring, moving to an owner that must
restore it, or unassigned keeps its position, so it never holds the others back (only the moving
tasks pause). Each task's batch is capped at
`max.records.per.task.per.batch` records, spread over its input partitions in order.

A task that sat out a Spark micro-batch (it moved after the batch was planned; see the source's
`read`) is behind the source's offsets: its host runs its next batch from where it is. A task behind
with no new records of its own still gets a batch (an empty range its host extends back), and so
does one whose last batch is the one a restarted driver plans again (its host replays it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.tasks import TaskProgress, TaskStatus

RUNNING = "RUNNING"
TAKING_OVER = frozenset({"CREATED", "RESTORING"})  # phases an owner reports while it opens a task


def takes_over_at_once(status: TaskStatus) -> bool:
    """The task's owner, named and caught up on it (TaskStatus.caught_up), is opening it: it runs
    within a moment, so its batch is worth waiting for."""
    return status.phase in TAKING_OVER and status.caught_up and bool(status.endpoint)


def advances(status: TaskStatus) -> bool:
    """The task gets new records in the next batch: it runs, or a caught-up owner takes it over."""
    return (status.phase == RUNNING and bool(status.endpoint)) or takes_over_at_once(status)


@dataclass(frozen=True)
class PlannedBatch:
    task: TaskId
    endpoint: str
    generation: int
    ranges: Mapping[TopicPartition, tuple[int, int]]
    batch_id: int | None = None  # the planner's number for the micro-batch it belongs to

    @property
    def records(self) -> int:
        return sum(end - start for start, end in self.ranges.values())


def latest_positions(
    start: Mapping[TopicPartition, int],
    statuses: Mapping[TaskId, TaskStatus],
    end_offsets: Mapping[TopicPartition, int],
    max_records_per_task: int | None,
) -> dict[TopicPartition, int]:
    """Spark's latestOffset: every input partition's end for the next batch. The partitions of a task
    that `advances` move on (at most `max_records_per_task` records in all); every other one stays."""
    out = dict(start)
    for status in statuses.values():
        if not advances(status):
            continue
        budget = max_records_per_task
        for tp in status.inputs:
            begin = start.get(tp, status.positions.get(tp, end_offsets.get(tp, 0)))
            end = max(begin, end_offsets.get(tp, begin))
            if budget is not None:
                end = min(end, begin + budget)
                budget -= end - begin
            out[tp] = end
    return out


def plan(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    statuses: Mapping[TaskId, TaskStatus],
    generation: int,
    batch_id: int | None = None,
    catch_up: frozenset[TaskId] = frozenset(),
) -> list[PlannedBatch]:
    """Spark's partitions(start, end): one batch per task with work or in `catch_up`, for its
    current owner."""
    batches = []
    for task, status in sorted(statuses.items()):
        ranges = {tp: (start[tp], end[tp]) for tp in status.inputs if tp in start and tp in end}
        if (task in catch_up or any(e > s for s, e in ranges.values())) and status.endpoint:
            batches.append(PlannedBatch(task, status.endpoint, generation, ranges, batch_id))
    return batches


def reported_behind(start: Mapping[TopicPartition, int], statuses: Mapping[TaskId, TaskStatus]) -> set[TaskId]:
    """RUNNING tasks whose reported positions are behind `start` on some input: they may have sat out
    a batch (or the report is a moment old: ask the owner before acting on it)."""
    return {task for task, status in statuses.items()
            if status.phase == RUNNING and status.endpoint and _behind(status.positions, start)}


def needs_batch(progress: TaskProgress, start: Mapping[TopicPartition, int], batch_id: int | None) -> bool:
    """A task without new records still needs a batch: it is behind `start` (it sat out one), or the
    batch planned is the one it applied last (a restarted driver plans it again: it must replay)."""
    return _behind(progress.positions, start) or (batch_id is not None and progress.last_batch == batch_id)


def _behind(positions: Mapping[TopicPartition, int], start: Mapping[TopicPartition, int]) -> bool:
    return any(tp in start and offset < start[tp] for tp, offset in positions.items())
