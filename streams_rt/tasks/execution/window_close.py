"""Time-windowed aggregations that emit on window close (KIP-825): the aggregation runs as with every
update, into the store (through its cache, which then forwards nothing), and after each record the
windows that closed since the last look (their end at or before the stream time minus grace) are
forwarded once each, oldest first, as Kafka's KStreamWindowAggregate does with
EmitStrategy.onWindowClose()."""

from __future__ import annotations

from collections.abc import Callable

from streams_rt.tasks.execution.aggregation import WindowedAggregateExec
from streams_rt.tasks.execution.caching import CachedWindowRanges
from streams_rt.tasks.execution.chunk import Chunk, Rec
from streams_rt.tasks.execution.emit import ClosingAggregateExec, WindowCloseEmitter
from streams_rt.topology.nodes import Aggregate
from streams_rt.topology.record import Windowed
from streams_rt.topology.windows import TimeWindows


class WindowCloseAggregateExec(WindowedAggregateExec, ClosingAggregateExec):
    def __init__(self, name: str, op: Aggregate, spec: TimeWindows, windows: CachedWindowRanges,
                 emitter: WindowCloseEmitter, wall_clock: Callable[[], int]) -> None:
        super().__init__(name, op, spec, windows)
        self.ranges, self.emitter, self.wall_clock = windows, emitter, wall_clock
        self.columnar = False  # a look for closed windows after every record

    def process(self, chunk: Chunk) -> None:
        for record in chunk.rows():
            self._each([record])
            if record[0] is not None:
                self._emit_closed(record, self.stream_time_ms - self.spec.grace_ms)

    def _emit_closed(self, record: Rec, close: int) -> None:
        emitter, size = self.emitter, self.spec.size_ms
        assert emitter is not None  # given at construction
        if not emitter.should_emit(close, self.wall_clock()):
            return
        upper = close - size
        if upper < 0:
            return
        last = emitter.last_emit_close_ms
        lower = 0 if last == -1 else max(0, last - size) + 1
        if last != -1 and self.spec.starts_for(upper) == self.spec.starts_for(lower - 1):
            return  # no window closed since the last look
        rows = [(Windowed(key, start, start + size), value, timestamp, record[3])
                for key, start, value, timestamp in self.ranges.fetch_all(lower, upper)]
        self.forward_rows(rows)
        emitter.last_emit_close_ms = close
