"""An active task's lifecycle and which batches it accepts, as a pure state machine.

    CREATED --restoring--> RESTORING --restored--> RUNNING --suspend--> SUSPENDED --close--> CLOSED
    (any but CLOSED) --close--> CLOSED

A batch names, per input partition, the offset range to process. A RUNNING task runs a batch that
starts at its committed positions. One that starts further on is run from the committed positions
to its ends: the task sat out an earlier batch while it moved between hosts (the Spark source lets
a micro-batch finish without a task that has no running owner), so the records the planner counted
as done are still to do, and they come now, never skipped. The batch applied last may be asked for
again (Spark retries a task whose outcome it never saw, a restarted driver re-runs its last batch)
and is answered from what was kept, never applied twice: the same ranges, or the same batch number
with the same ends. A batch with nothing in it at the committed positions is nothing to do. One
that starts before the committed positions is refused with a typed reason the caller can act on."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from streams_rt.protocol import TaskId, TopicPartition

Ranges = Mapping[TopicPartition, tuple[int, int]]  # partition -> [start, end)


class TaskPhase(enum.Enum):
    CREATED = "CREATED"
    RESTORING = "RESTORING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    CLOSED = "CLOSED"


TRANSITIONS: Mapping[TaskPhase, frozenset[TaskPhase]] = {
    TaskPhase.CREATED: frozenset({TaskPhase.RESTORING, TaskPhase.CLOSED}),
    TaskPhase.RESTORING: frozenset({TaskPhase.RUNNING, TaskPhase.CLOSED}),
    TaskPhase.RUNNING: frozenset({TaskPhase.SUSPENDED, TaskPhase.CLOSED}),
    TaskPhase.SUSPENDED: frozenset({TaskPhase.CLOSED}),
    TaskPhase.CLOSED: frozenset(),
}


class IllegalTaskTransition(RuntimeError):
    def __init__(self, task: TaskId, frm: TaskPhase, to: TaskPhase) -> None:
        super().__init__(f"task {task}: invalid transition {frm.value} -> {to.value}")


class Refusal(enum.Enum):
    """Why a batch was refused; all are retriable except WRONG_PARTITIONS."""

    NOT_OWNER = "NOT_OWNER"  # this host does not run the task (moved, never assigned, closing)
    RESTORING = "RESTORING"  # it will, once its state is restored
    OUT_OF_ORDER = "OUT_OF_ORDER"  # the range does not start at the task's committed positions
    WRONG_PARTITIONS = "WRONG_PARTITIONS"  # the request names other partitions than the task reads

    @property
    def retriable(self) -> bool:
        return self is not Refusal.WRONG_PARTITIONS


@dataclass(frozen=True)
class Admission:
    """RUN `ranges` (the batch, or the batch extended back to the committed positions: `reason` then
    says so), REPLAY the last one from what was kept, do nothing (none set: an empty batch at the
    positions), or refuse (`refusal` set)."""

    run: bool = False
    replay: bool = False
    refusal: Refusal | None = None
    reason: str = ""
    ranges: Ranges | None = None  # what RUN processes


class ActiveTask:
    def __init__(self, task: TaskId, inputs: frozenset[TopicPartition]) -> None:
        self.task = task
        self.inputs = inputs
        self.phase = TaskPhase.CREATED
        self.positions: dict[TopicPartition, int] = {}  # committed: the next offset to process
        self.last_ranges: dict[TopicPartition, tuple[int, int]] | None = None
        self.last_batch: int | None = None  # the planner's number for the batch applied last, if it gave one

    def move(self, to: TaskPhase) -> None:
        if to not in TRANSITIONS[self.phase]:
            raise IllegalTaskTransition(self.task, self.phase, to)
        self.phase = to

    def restored(self, positions: Mapping[TopicPartition, int], last_ranges: Ranges | None,
                 last_batch: int | None = None) -> None:
        """RESTORING -> RUNNING, at the committed positions, knowing the batch applied last."""
        missing = self.inputs - set(positions)
        if missing:
            raise ValueError(f"task {self.task}: no committed position for {sorted(missing)}")
        self.move(TaskPhase.RUNNING)
        self.positions = dict(positions)
        self.last_ranges = dict(last_ranges) if last_ranges is not None else None
        self.last_batch = last_batch

    def admit(self, ranges: Ranges, batch_id: int | None = None) -> Admission:
        if self.phase in (TaskPhase.CREATED, TaskPhase.RESTORING):
            return Admission(refusal=Refusal.RESTORING, reason=f"task {self.task} is {self.phase.value} here")
        if self.phase is not TaskPhase.RUNNING:
            return Admission(refusal=Refusal.NOT_OWNER, reason=f"task {self.task} is {self.phase.value} here")
        if set(ranges) != self.inputs:
            return Admission(refusal=Refusal.WRONG_PARTITIONS,
                             reason=f"task {self.task} reads {sorted(map(str, self.inputs))}, "
                                    f"the batch names {sorted(map(str, ranges))}")
        bad = [f"{tp}: [{s}, {e})" for tp, (s, e) in ranges.items() if not s <= e]
        if bad:
            return Admission(refusal=Refusal.WRONG_PARTITIONS, reason=f"empty-or-negative ranges {bad}")
        if self.last_ranges is not None and (dict(ranges) == self.last_ranges or (
                batch_id is not None and batch_id == self.last_batch and _ends_as(ranges, self.last_ranges))):
            return Admission(replay=True)
        starts = {tp: start for tp, (start, _) in ranges.items()}
        if any(start < self.positions[tp] for tp, start in starts.items()):
            reason = f"task {self.task} is at {_fmt(self.positions)}, the batch starts at {_fmt(starts)}"
            return Admission(refusal=Refusal.OUT_OF_ORDER, reason=reason)
        run = {tp: (self.positions[tp], end) for tp, (_, end) in ranges.items()}
        if all(start == end for start, end in run.values()):
            return Admission()
        extended = "" if starts == self.positions else (
            f"the batch starts at {_fmt(starts)}; running it from {_fmt(self.positions)}, where the task is "
            "(it sat out an earlier batch while it moved)")
        return Admission(run=True, ranges=run, reason=extended)

    def applied(self, ranges: Ranges, batch_id: int | None = None) -> None:
        """The batch is durable: the positions move to its ends."""
        self.positions = {tp: end for tp, (_, end) in ranges.items()}
        self.last_ranges = dict(ranges)
        self.last_batch = batch_id


def _ends_as(ranges: Ranges, last: Ranges) -> bool:
    """`ranges` end where `last` ended and start where it started or further on (the batch applied
    last made up for one the task sat out: its request started further on than what it ran)."""
    return set(ranges) == set(last) and all(
        ranges[tp][1] == end and start <= ranges[tp][0] <= end for tp, (start, end) in last.items())


def _fmt(positions: Mapping[TopicPartition, int]) -> str:
    return ", ".join(f"{tp}@{offset}" for tp, offset in sorted(positions.items()))
