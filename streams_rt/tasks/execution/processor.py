"""The processor API's node: a user processor run record by record, its context (forwarding, stores,
the task's stream time and the wall clock) and its punctuations, as Kafka's ProcessorNode,
ProcessorContext and PunctuationQueue."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from streams_rt.protocol import TaskId
from streams_rt.tasks.execution.base import Exec, UserCodeError
from streams_rt.tasks.execution.chunk import Chunk, Rec
from streams_rt.topology import Record
from streams_rt.topology.processor import Processor, PunctuationType, Punctuator

# User processors get `Record`s (a NamedTuple of the same layout as the runtime's tuples), made
# without the NamedTuple's constructor (about a microsecond a record).
_as_record = tuple.__new__


class TaskTime:
    """The task's stream time, as Kafka's PartitionGroup keeps it: the largest timestamp of the
    records the task has taken from its inputs, whichever node they reach. `at(i)` is the stream
    time while the chunk's i-th record (its source index) is processed; the runner fills `times`
    for each chunk before running it."""

    def __init__(self, wall_clock: Callable[[], int]) -> None:
        self.wall_clock = wall_clock
        self.stream_time_ms = -1  # after the last chunk
        self.times: list[int] = []  # prefix maxima of the current chunk's timestamps

    def start_chunk(self, timestamps: list[int]) -> None:
        current, times = self.stream_time_ms, []
        for ts in timestamps:
            if ts > current:
                current = ts
            times.append(current)
        self.times = times
        self.stream_time_ms = current

    def at(self, index: int) -> int:
        return self.times[index] if 0 <= index < len(self.times) else self.stream_time_ms


class _Schedule:
    """Kafka's PunctuationSchedule: due at `due_ms` (stream time: 0, so the first record triggers it;
    wall clock: one interval after scheduling), then at the next multiple of the interval past the
    time that fired it (a jump over several fires once)."""

    def __init__(self, interval_ms: int, punctuator: Punctuator, kind: PunctuationType, due_ms: int) -> None:
        self.interval_ms, self.punctuator, self.kind, self.due_ms = interval_ms, punctuator, kind, due_ms
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def fire_if_due(self, now: int) -> bool:
        if self.cancelled or now < self.due_ms:
            return False
        missed = (now - self.due_ms) // self.interval_ms
        self.due_ms += (missed + 1) * self.interval_ms
        self.punctuator(now)
        return True


class _Context:
    """What a user processor sees of its node (Kafka's ProcessorContext)."""

    def __init__(self, node: ProcessExec, task: TaskId, stores: dict[str, Any], time: TaskTime) -> None:
        self._node, self._task, self._stores, self._time = node, task, stores, time
        self.pending: list[tuple[str | None, Rec]] = []  # (child or None for all, record), in order
        self.schedules: list[_Schedule] = []
        self.source_index = -1  # of the input record being processed: stamped on what is forwarded

    @property
    def task_id(self) -> TaskId:
        return self._task

    @property
    def stream_time(self) -> int:
        return self._time.at(self.source_index)

    @property
    def wall_clock_time(self) -> int:
        return self._time.wall_clock()

    def forward(self, record: Record | Rec, child: str | None = None) -> None:
        if child is not None and child not in self._node.child_names():
            raise KeyError(f"processor {self._node.name} has no child {child!r}; "
                           f"its children are {self._node.child_names()}")
        if len(record) < 4 or record[3] < 0:
            record = (record[0], record[1], record[2], self.source_index)
        self.pending.append((child, record))

    def get_state_store(self, name: str) -> Any:
        try:
            return self._stores[name]
        except KeyError:
            raise KeyError(f"processor {self._node.name} has no store {name!r}; "
                           f"it was given {sorted(self._stores)}") from None

    def schedule(self, interval_ms: int, punctuator: Punctuator,
                 punctuation_type: PunctuationType = PunctuationType.STREAM_TIME) -> _Schedule:
        if interval_ms <= 0:
            raise ValueError(f"punctuation interval must be positive, got {interval_ms} ms")
        wall = punctuation_type is PunctuationType.WALL_CLOCK_TIME
        schedule = _Schedule(interval_ms, punctuator, punctuation_type,
                             self._time.wall_clock() + interval_ms if wall else 0)
        self.schedules.append(schedule)
        return schedule


def _child_of(entry: tuple[str | None, Rec]) -> str | None:
    return entry[0]


class ProcessExec(Exec):
    """A user processor, record by record; what it forwards goes downstream after each record.
    Stream-time punctuations are checked after every record the task takes in, as Kafka's task
    does, also those that never reach this node (filtered upstream, or routed elsewhere): they
    advance the task's stream time all the same."""

    def __init__(self, name: str, processor: Processor, task: TaskId, stores: dict[str, Any],
                 time: TaskTime) -> None:
        super().__init__(name)
        self.processor = processor
        self.time = time
        self.context = _Context(self, task, stores, time)
        self._checked = -1  # the last source index whose stream time punctuations were checked at
        processor.init(self.context)

    def child_names(self) -> list[str]:
        return [c.name for c in self.children]

    def process(self, chunk: Chunk) -> None:
        context, processor = self.context, self.processor
        for record in chunk.rows():
            index = record[3]
            self._catch_up(index - 1, record)
            context.source_index = index
            try:
                processor.process(_as_record(Record, record))
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            self._emit()
            self._catch_up(index, record)

    def end_chunk(self) -> None:
        """The runner's chunk is done: punctuate at the stream times of its records that came
        after the last one this node saw; the next chunk's indexes start again at 0."""
        self._catch_up(len(self.time.times) - 1, None)
        self._checked = -1

    def punctuate_wall_clock(self, now: int) -> None:
        """Run the wall-clock punctuations due at `now` (the runner calls it once per batch)."""
        self._fire(PunctuationType.WALL_CLOCK_TIME, now, None)

    def _catch_up(self, index: int, record: Rec | None) -> None:
        """Stream-time punctuations at each task record up to `index` not yet checked."""
        while self._checked < index:
            self._checked += 1
            self.context.source_index = self._checked
            self._fire(PunctuationType.STREAM_TIME, self.time.at(self._checked), record)

    def _fire(self, kind: PunctuationType, now: int, record: Rec | None) -> None:
        context = self.context
        for schedule in context.schedules:
            if schedule.kind is not kind:
                continue
            try:
                fired = schedule.fire_if_due(now)
            except Exception as e:
                raise UserCodeError(self.name, record or (None, None, now, context.source_index), e) from e
            if fired:
                self._emit()
        context.schedules = [s for s in context.schedules if not s.cancelled]

    def _emit(self) -> None:
        """What the processor forwarded, in the order it did: runs forwarded to the same child (or
        to all) go as one list."""
        pending = self.context.pending
        if not pending:
            return
        self.context.pending = []
        for child_name, run in itertools.groupby(pending, key=_child_of):
            records = [record for _, record in run]
            if child_name is None:
                self.forward_rows(records)
                continue
            for child in self.children:
                if child.name == child_name:
                    child.process(Chunk.from_rows(records))

    def close(self) -> None:
        self.processor.close()
