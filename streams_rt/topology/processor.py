"""The processor API (Kafka Streams' `Processor` / `ProcessorContext`): a user processor gets its
context in `init`, one record at a time in `process`, and may schedule punctuations on stream time,
use named state stores and forward records downstream."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streams_rt.protocol import TaskId
from streams_rt.topology.record import Record

Punctuator = Callable[[int], None]  # called with the stream time that triggered it


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class ProcessorContext(Protocol):
    """What a processor may do: forward, read its stores, schedule punctuations on stream time."""

    @property
    def task_id(self) -> TaskId: ...

    @property
    def stream_time(self) -> int:
        """The largest record timestamp this task has processed (-1 before the first)."""

    def forward(self, record: Record, child: str | None = None) -> None: ...

    def get_state_store(self, name: str) -> Any: ...

    def schedule(self, interval_ms: int, punctuator: Punctuator) -> Cancellable:
        """Call `punctuator(stream_time)` whenever stream time has advanced by `interval_ms` since
        the last call (once per advance, however far it jumped), as Kafka's STREAM_TIME type."""


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
