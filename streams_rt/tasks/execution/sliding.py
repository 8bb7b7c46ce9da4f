"""Sliding windowed aggregations (KIP-450), record by record as Kafka's KStreamSlidingWindowAggregate
with its reverse iterator: a record at t updates every existing window of its key that contains t,
creates its own left window [t - d, t] (from the aggregate of the records before it within d),
creates its right window [t + 1, t + 1 + d] if a later record falls in it, and the right window of
the record just before it if that was missing. Records earlier than d (`_process_early`) go to the
window [0, d] instead of a left window. Records with a null key or value are dropped; a window is
late when it ends before the stream time minus grace. Windows are values with the largest
timestamp of their records (Kafka's ValueAndTimestamp), forwarded through the store's cache (with
emit-on-window-close, once each, when it closes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams_rt.tasks.execution.base import SkipCounter, UserCodeError
from streams_rt.tasks.execution.caching import CachedWindowRanges
from streams_rt.tasks.execution.chunk import Rec
from streams_rt.tasks.execution.emit import ClosingAggregateExec, WindowCloseEmitter
from streams_rt.topology.changes import Change
from streams_rt.topology.record import Windowed
from streams_rt.topology.windowed import SlidingAggregate

# A window's aggregate and the largest timestamp of its records (None: no aggregate).
Agg = tuple[Any, int] | None


class SlidingAggregateExec(ClosingAggregateExec):
    def __init__(self, name: str, op: SlidingAggregate, windows: CachedWindowRanges,
                 emitter: WindowCloseEmitter | None, wall_clock: Callable[[], int]) -> None:
        super().__init__(name)
        self.op, self.windows, self.emitter, self.wall_clock = op, windows, emitter, wall_clock
        self.difference = op.windows.time_difference_ms
        self.skipped = SkipCounter(name)

    def _one(self, record: Rec) -> None:
        key, value, timestamp = record[0], record[1], record[2]
        if key is None or value is None:
            self.skipped.skip("null key or value")
            return
        self.stream_time_ms = max(self.stream_time_ms, timestamp)
        close = self.stream_time_ms - self.op.windows.grace_ms
        if timestamp + self.difference < close:
            self.skipped.skip(f"late: window [{timestamp}, {timestamp + self.difference}] closed at stream time "
                              f"{self.stream_time_ms} (grace {self.op.windows.grace_ms} ms)")
            return
        if timestamp < self.difference:
            self._process_early(record, close)
            return
        self._process(record, close)
        if self.emitter is not None:
            self._emit_closed(record, close)

    def _initial(self, timestamp: int, record: Rec) -> Agg:
        """Kafka's ValueTimestampHeaders.make(initializer(), t): None when the initializer gives None."""
        try:
            initial = self.op.initializer()
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e
        return None if initial is None else (initial, timestamp)

    def _process(self, record: Rec, close: int) -> None:
        """Kafka's processReverse: the key's windows starting in [t - 2d, t + 1], newest first."""
        key, timestamp, d = record[0], record[2], self.difference
        starts: set[int] = set()
        left_agg: Agg = None
        right_agg: Agg = None
        left_created = right_created = False
        previous: int | None = None
        for start, agg, max_ts in reversed(self.windows.fetch(key, max(0, timestamp - 2 * d), timestamp + 1)):
            starts.add(start)
            end = start + d
            found = (agg, max_ts)
            if start == timestamp + 1:
                right_created = True
            elif end > timestamp:
                if right_agg is None:
                    right_agg = found
                self._update(start, found, record, close)
            elif end == timestamp:
                left_created = True
                self._update(start, found, record, close)
                if max_ts >= timestamp:
                    return
                previous = max_ts
            else:
                left_agg = found
                previous = max_ts
                break
        self._create(record, close, starts, right_agg, left_agg, left_created, right_created, previous)

    def _process_early(self, record: Rec, close: int) -> None:
        """Kafka's processEarly: a record before the time difference, whose left window would start
        before 0, updates the window [0, d] instead."""
        key, timestamp = record[0], record[2]
        combined: tuple[int, Agg] | None = None
        right_agg: Agg = None
        right_created = False
        starts: set[int] = set()
        previous: int | None = None
        for start, agg, max_ts in self.windows.fetch(key, 0, timestamp + 1):
            starts.add(start)
            found = (agg, max_ts)
            if start == 0:
                combined = (start, found)
                if max_ts < timestamp:
                    previous = max_ts
            elif start <= timestamp:
                right_agg = found
                self._update(start, found, record, close)
            elif start == timestamp + 1:
                right_created = True
        if right_agg is None and combined is not None and combined[1] is not None and combined[1][1] > timestamp:
            right_agg = combined[1]
        if not right_created and right_agg is not None and right_agg[1] > timestamp:
            self._create_current_right(record, right_agg)
        if previous is not None and previous + 1 not in starts:
            self._update(previous + 1, self._initial(timestamp, record), record, close)
        if combined is None:
            self._update(0, self._initial(timestamp, record), record, close)
        else:
            self._update(combined[0], combined[1], record, close)

    def _create(self, record: Rec, close: int, starts: set[int], right_agg: Agg, left_agg: Agg,
                left_created: bool, right_created: bool, previous: int | None) -> None:
        timestamp, d = record[2], self.difference
        if previous is not None and previous + 1 not in starts and previous + 1 + d >= timestamp:
            self._update(previous + 1, self._initial(timestamp, record), record, close)
        if not left_created:
            if previous is not None and timestamp - d <= previous:
                assert left_agg is not None
                left: Agg = None if left_agg[0] is None else (left_agg[0], timestamp)
            else:
                left = self._initial(timestamp, record)
            self._update(timestamp - d, left, record, close)
        if not right_created and right_agg is not None and right_agg[1] > timestamp:
            self._create_current_right(record, right_agg)

    def _create_current_right(self, record: Rec, right_agg: tuple[Any, int]) -> None:
        """The record's right window starts as the aggregate of the later records it holds."""
        start = record[2] + 1
        self.windows.put(record[0], start, right_agg[0], right_agg[1])

    def _update(self, start: int, current: Agg, record: Rec, close: int) -> None:
        """Kafka's updateWindowAndForward: the window aggregated with the record, unless it has closed."""
        key, value, timestamp = record[0], record[1], record[2]
        end = start + self.difference
        if end < close:
            self.skipped.skip(f"late: window [{start}, {end}] closed at stream time {self.stream_time_ms}")
            return
        old = None if current is None else current[0]
        try:
            new = self.op.aggregator(key, value, old)
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e
        new_timestamp = timestamp if old is None or current is None else max(timestamp, current[1])
        self.windows.put(key, start, new, new_timestamp)  # its cache forwards it (not on window close)

    def _emit_closed(self, record: Rec, close: int) -> None:
        """Every window that ended since the last look, once (Kafka's fetchAndEmit)."""
        emitter = self.emitter
        assert emitter is not None
        d = self.difference
        if not emitter.should_emit(close, self.wall_clock()):
            return
        upper = close - d - 1
        if upper < 0:
            return
        lower = 0 if emitter.last_emit_close_ms == -1 else max(0, emitter.last_emit_close_ms - d)
        rows = [(Windowed(key, start, start + d), Change(value, None), timestamp, record[3])
                for key, start, value, timestamp in self.windows.fetch_all(lower, upper)]
        self.forward_rows(rows)
        emitter.last_emit_close_ms = close
