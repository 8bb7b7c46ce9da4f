"""Stream-stream joins, record by record as Kafka's KStreamJoinWindow and KStreamKStreamJoin (see
streams_rt.topology.joins): each side's window node keeps its records in a window store that
retains duplicates; each side's join node joins a record with the other side's records within the
window, and, for left and outer joins, holds a record that found no partner in the shared outer
store until its window has closed, then emits it joined with None. The two join nodes of one join
share a `TimeTracker` per task (the join's stream time, kept with each commit like every node's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams_rt.state.stores import KeyValueStore, WindowStore
from streams_rt.state.stores.typed import serialized_key
from streams_rt.tasks.execution.base import Exec, SkipCounter, UserCodeError
from streams_rt.tasks.execution.chunk import Chunk, Rec
from streams_rt.tasks.execution.emit import LONG_MAX, TimeTracker, java_long
from streams_rt.topology.joins import LeftOrRightListSerde, OuterJoinKeySerde, StreamStreamJoin
from streams_rt.topology.serdes import Serde, TimestampedSerde


class JoinWindowExec(Exec):
    """Forwards each record, then keeps it in its side's window store at its timestamp (records
    without a key are never joined, so not kept)."""

    def __init__(self, name: str, store: WindowStore, keys: Serde[Any], values: Serde[Any]) -> None:
        super().__init__(name)
        self.store, self.keys, self.values = store, keys, TimestampedSerde(values)

    def process(self, chunk: Chunk) -> None:
        for record in chunk.rows():
            self.forward_rows([record])
            key, value, timestamp = record[0], record[1], record[2]
            if key is not None:
                try:
                    data = self.values.serialize_timestamped(value, timestamp)
                    self.store.put(serialized_key(self.keys, key), data, timestamp)
                except Exception as e:
                    raise UserCodeError(self.name, record, e) from e


class StreamJoinExec(Exec):
    """One side of a stream-stream join (see the module docstring)."""

    def __init__(self, name: str, op: StreamStreamJoin, tracker: TimeTracker, other: WindowStore,
                 outer: KeyValueStore | None, wall_clock: Callable[[], int]) -> None:
        self.tracker = tracker  # before Exec's own __init__, which sets the stream time
        super().__init__(name)
        self.op, self.other, self.outer, self.wall_clock = op, other, outer, wall_clock
        self.keys = op.key_serde
        self.other_values = TimestampedSerde(op.right_value_serde if op.left_side else op.left_value_serde)
        self.outer_keys = OuterJoinKeySerde(op.key_serde)
        self.outer_values = LeftOrRightListSerde(op.left_value_serde, op.right_value_serde)
        self.skipped = SkipCounter(name)

    # The join's stream time is the tracker's, shared with the other side and kept with each commit.
    @property
    def stream_time_ms(self) -> int:
        return self.tracker.stream_time

    @stream_time_ms.setter
    def stream_time_ms(self, value: int) -> None:
        self.tracker.stream_time = value

    def _joined(self, record: Rec, this: Any, other: Any) -> Any:
        """The user's joiner on (left value, right value), whichever side this is."""
        try:
            return self.op.joiner(this, other) if self.op.left_side else self.op.joiner(other, this)
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e

    def process(self, chunk: Chunk) -> None:
        for record in chunk.rows():
            self._one(record)

    def _one(self, record: Rec) -> None:
        op, tracker = self.op, self.tracker
        key, value, timestamp, index = record
        tracker.advance_stream_time(timestamp)
        if op.outer and key is None and value is not None:
            self.forward_rows([(key, self._joined(record, value, None), timestamp, index)])
            return
        if key is None or value is None:
            self.skipped.skip("null key or value")
            return
        if self.outer is not None and timestamp == tracker.stream_time:
            self._emit_closed(record)
        key_bytes = serialized_key(self.keys, key)
        time_from = max(0, timestamp - op.before_ms)
        time_to = max(0, timestamp + op.after_ms)
        partners = self.other.fetch(key_bytes, time_from, time_to)
        for other_time, data in partners:
            found = self.other_values.deserialize_timestamped(data)
            assert found is not None  # the store holds no deletes
            if self.outer is not None:  # a record that found a partner no longer waits as unjoined
                waiting = self.outer_keys.serialize((other_time, not op.left_side, key))
                assert waiting is not None
                if self.outer.get(waiting) is not None:
                    self.outer.put(waiting, None)
            self.forward_rows([(key, self._joined(record, value, found[0]), max(timestamp, other_time), index)])
        if op.outer and not partners:
            if self.outer is None or time_to < tracker.stream_time:
                self.forward_rows([(key, self._joined(record, value, None), timestamp, index)])
            else:
                tracker.update_min_time(timestamp)
                self._hold(key, value, timestamp)

    def _hold(self, key: Any, value: Any, timestamp: int) -> None:
        """Keep a record without a partner in the outer store until its window closes."""
        assert self.outer is not None
        waiting = self.outer_keys.serialize((timestamp, self.op.left_side, key))
        assert waiting is not None
        held = self.outer.get(waiting) or b""
        self.outer.put(waiting, held + self.outer_values.entry(self.op.left_side, value))

    def _emit_closed(self, record: Rec) -> None:
        """Kafka's emitNonJoinedOuterRecords: the held records whose window has closed, oldest first,
        each joined with None (stamped with its own time; what else travels with it, the
        current record's), then deleted."""
        tracker, windows = self.tracker, self.op.windows
        if java_long(tracker.min_time + self.op.after_ms + windows.grace_ms) >= tracker.stream_time:
            return
        if not tracker.may_emit(self.wall_clock()):
            return
        assert self.outer is not None
        tracker.min_time = LONG_MAX
        left_open = right_open = False
        previous: bytes | None = None
        for waiting, data in self.outer.all():
            found = self.outer_keys.deserialize(waiting)
            assert found is not None
            held_time, is_left, key = found
            tracker.min_time = held_time
            if left_open and right_open:
                break
            look_back = windows.after_ms if is_left else windows.before_ms
            if held_time + look_back + windows.grace_ms >= tracker.stream_time:
                if is_left:
                    left_open = True
                else:
                    right_open = True
                continue
            for held_left, held_value in self.outer_values.deserialize(data) or []:
                left_value, right_value = (held_value, None) if held_left else (None, held_value)
                try:
                    joined = self.op.joiner(left_value, right_value)
                except Exception as e:
                    raise UserCodeError(self.name, record, e) from e
                self.forward_rows([(key, joined, held_time, record[3])])
            if previous is not None and previous != waiting:
                self.outer.put(previous, None)
            previous = waiting
        if previous is not None:
            self.outer.put(previous, None)
