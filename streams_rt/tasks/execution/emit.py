"""What decides when an operator that waits for time emits: Kafka's TimeTracker (a stream time, the
earliest time still waiting, and a wall-clock throttle) and the two throttles' settings, under
Kafka's own (internal) names. Kafka limits how often a left/outer stream-stream join looks for
records whose window closed, and how often an emit-on-window-close aggregation looks for closed
windows, to once per interval of wall-clock time (1 s by default); streams_rt does the same, so
both emit what and when Kafka Streams would."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streams_rt.tasks.execution.base import Exec
from streams_rt.tasks.execution.chunk import Chunk, Rec

OUTER_JOIN_EMIT_INTERVAL = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"
WINDOWED_AGGREGATION_EMIT_INTERVAL = "__emit.interval.ms.kstreams.windowed.aggregation__"
LONG_MAX = 2**63 - 1


def java_long(value: int) -> int:
    """`value` as Java's long arithmetic leaves it (wrapping at 64 bits): Kafka's checks add to
    Long.MAX_VALUE ("nothing waits") and rely on the wrap."""
    return (value + 2**63) % 2**64 - 2**63


@dataclass(frozen=True)
class EmitIntervals:
    """Wall-clock milliseconds between two looks for closed windows (0: after every record)."""

    outer_join_ms: int = 1000
    windowed_aggregation_ms: int = 1000

    @staticmethod
    def from_properties(properties: Mapping[str, Any]) -> EmitIntervals:
        return EmitIntervals(int(properties.get(OUTER_JOIN_EMIT_INTERVAL, 1000)),
                             int(properties.get(WINDOWED_AGGREGATION_EMIT_INTERVAL, 1000)))


KAFKA_EMIT_INTERVALS = EmitIntervals()  # Kafka's defaults: 1 s each


class TimeTracker:
    """Kafka's KStreamImplJoin.TimeTracker: the largest timestamp seen, the earliest one waiting in
    an outer store (Long.MAX_VALUE: none), and when the wall clock next allows a look."""

    def __init__(self, emit_interval_ms: int) -> None:
        self.emit_interval_ms = emit_interval_ms
        self.stream_time = -1
        self.min_time = LONG_MAX
        self.next_time_to_emit = 0

    def advance_stream_time(self, timestamp: int) -> None:
        if timestamp > self.stream_time:
            self.stream_time = timestamp

    def update_min_time(self, timestamp: int) -> None:
        if timestamp < self.min_time:
            self.min_time = timestamp

    def may_emit(self, now_ms: int) -> bool:
        """Whether the throttle lets a look happen at `now_ms`; if so, the next one is an interval on."""
        if now_ms < self.next_time_to_emit:
            return False
        self.next_time_to_emit = now_ms + self.emit_interval_ms
        return True


class WindowCloseEmitter:
    """An emit-on-window-close aggregation's bookkeeping (Kafka's AbstractKStreamTimeWindowAggregate-
    Processor): the close time it last emitted up to (kept with each commit, as Kafka keeps it in
    the committed offsets' metadata) and the wall-clock throttle on looking for closed windows."""

    def __init__(self, emit_interval_ms: int) -> None:
        self.throttle = TimeTracker(emit_interval_ms)
        self.last_emit_close_ms = -1

    def should_emit(self, close_ms: int, now_ms: int) -> bool:
        """Kafka's shouldEmitFinal: the throttle allows a look, and windows closed since the last."""
        if not self.throttle.may_emit(now_ms):
            return False
        return self.last_emit_close_ms == -1 or self.last_emit_close_ms < close_ms

    def saved(self, name: str) -> dict[str, int]:
        return {} if self.last_emit_close_ms < 0 else {f"{name}@last-emit-close": self.last_emit_close_ms}

    def restore(self, name: str, times: Mapping[str, int]) -> None:
        self.last_emit_close_ms = times.get(f"{name}@last-emit-close", -1)


class ClosingAggregateExec(Exec):
    """A windowed aggregation that may emit on window close: its emitter's last close time is kept
    with the node's stream time (saved with each commit, restored on a restart or a move)."""

    emitter: WindowCloseEmitter | None = None

    def process(self, chunk: Chunk) -> None:
        for record in chunk.rows():
            self._one(record)

    def _one(self, record: Rec) -> None:
        """One record into the windows it falls in (session merges and sliding windows are per record)."""
        raise NotImplementedError

    def saved_times(self) -> dict[str, int]:
        times = super().saved_times()
        if self.emitter is not None:
            times.update(self.emitter.saved(self.name))
        return times

    def restore_times(self, times: Mapping[str, int]) -> None:
        super().restore_times(times)
        if self.emitter is not None:
            self.emitter.restore(self.name, times)
