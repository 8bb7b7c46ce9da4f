"""Session windowed aggregations, record by record as Kafka's KStreamSessionWindowAggregate: a record
joins every session of its key within the inactivity gap of it (their aggregates merged, the old
sessions removed), and the merged session is updated with it; a record whose merged session would
end before the stream time minus grace and gap is dropped as late. Updates (and removals, as None)
are forwarded through the session store's cache, stamped with the session's end; with
emit-on-window-close, each session is forwarded once, when it has closed, instead."""

from __future__ import annotations

from collections.abc import Callable

from streams_rt.tasks.execution.base import SkipCounter, UserCodeError
from streams_rt.tasks.execution.caching import CachedSessions
from streams_rt.tasks.execution.chunk import Rec
from streams_rt.tasks.execution.emit import ClosingAggregateExec, WindowCloseEmitter
from streams_rt.topology.changes import Change
from streams_rt.topology.record import Windowed
from streams_rt.topology.windowed import SessionAggregate


class SessionAggregateExec(ClosingAggregateExec):
    def __init__(self, name: str, op: SessionAggregate, sessions: CachedSessions, emitter: WindowCloseEmitter | None,
                 wall_clock: Callable[[], int]) -> None:
        super().__init__(name)
        self.op, self.sessions, self.emitter, self.wall_clock = op, sessions, emitter, wall_clock
        self.skipped = SkipCounter(name)

    def _one(self, record: Rec) -> None:
        key, value, timestamp = record[0], record[1], record[2]
        if key is None:
            self.skipped.skip("null key")
            return
        op, sessions = self.op, self.sessions
        gap = op.windows.gap_ms
        self.stream_time_ms = max(self.stream_time_ms, timestamp)
        close = self.stream_time_ms - op.windows.grace_ms - gap
        merged = sessions.find(key, timestamp - gap, timestamp + gap)
        start = end = timestamp
        try:
            agg = op.initializer()
            for found_start, found_end, found in merged:
                agg = op.merger(key, agg, found)
                start, end = min(start, found_start), max(end, found_end)
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e
        if end < close:
            self.skipped.skip(f"late: session [{start}, {end}] closed at stream time {self.stream_time_ms} "
                              f"(grace {op.windows.grace_ms} ms, gap {gap} ms)")
        else:
            if (start, end) != (timestamp, timestamp):
                for found_start, found_end, _ in merged:
                    sessions.put(key, found_start, found_end, None)
            try:
                agg = op.aggregator(key, value, agg)
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            sessions.put(key, start, end, agg)
        if self.emitter is not None:
            self._emit_closed(record, close)

    def _emit_closed(self, record: Rec, close: int) -> None:
        """Kafka's maybeForwardFinalResult: every session that ended since the last look and before
        `close`, once, stamped with its end (the current record's index: what else it carries)."""
        emitter = self.emitter
        assert emitter is not None
        if not emitter.should_emit(close, self.wall_clock()):
            return
        lower, upper = max(0, emitter.last_emit_close_ms), close - 1
        if upper < 0 or upper < lower:
            return
        rows = [(Windowed(key, start, end), Change(value, None), end, record[3])
                for key, start, end, value in self.sessions.find_ending(lower, upper)]
        self.forward_rows(rows)
        emitter.last_emit_close_ms = close

