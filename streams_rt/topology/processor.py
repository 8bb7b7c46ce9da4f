"""The processor API (Kafka Streams' `Processor` / `ProcessorContext`): a user processor gets its
context in `init`, one record at a time in `process`, and may schedule punctuations on stream time or
wall-clock time, use named state stores and forward records downstream."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Protocol

from streams_rt.protocol import TaskId
from streams_rt.topology.record import Record

Punctuator = Callable[[int], None]  # called with the time (stream or wall-clock) that triggered it


class PunctuationType(enum.Enum):
    """Kafka's PunctuationType. STREAM_TIME: driven by the task's records, first due at 0 (so the
    first record triggers it). WALL_CLOCK_TIME: driven by the clock, first due one interval after
    scheduling; a task host checks it after each batch it runs for the task, so it fires at most
    one micro-batch late."""

    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class ProcessorContext(Protocol):
    """What a processor may do: forward, read its stores, schedule punctuations on stream time."""

    @property
    def task_id(self) -> TaskId: ...

    @property
    def stream_time(self) -> int:
        """The largest record timestamp this task has processed, the current record's included
        (-1 before the first); Kafka's currentStreamTimeMs."""

    @property
    def wall_clock_time(self) -> int:
        """The wall clock in epoch ms (the TopologyTestDriver's own clock under test); Kafka's
        currentSystemTimeMs."""

    def forward(self, record: Record, child: str | None = None) -> None: ...

    def get_state_store(self, name: str) -> Any: ...

    def schedule(self, interval_ms: int, punctuator: Punctuator,
                 punctuation_type: PunctuationType = PunctuationType.STREAM_TIME) -> Cancellable:
        """Call `punctuator(time)` whenever the time of `punctuation_type` has advanced by
        `interval_ms` since the last call (once per advance, however far it jumped), as Kafka's
        schedule(interval, type, punctuator)."""


class Processor(Protocol):
    def init(self, context: ProcessorContext) -> None: ...

    def process(self, record: Record) -> None: ...

    def close(self) -> None: ...


class BaseProcessor:
    """A convenience base: keeps the context, does nothing on close."""

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release by default."""


ProcessorSupplier = Callable[[], Processor]
