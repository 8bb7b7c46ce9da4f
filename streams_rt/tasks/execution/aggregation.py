"""Aggregations into a store through its record cache (count, reduce, aggregate; windowed too), as
Kafka's KStreamAggregate and KStreamWindowAggregate do them, record by record; and the built-in
aggregators (streams_rt.topology.aggregators) per batch, when the cache collects updates until its
flush: Arrow's hash aggregation reduces the chunk per key (or per key and window), and each key's
partial is folded into its cached or stored state once. The cache then holds what the record path
would leave in it, in the same order (keys by their last record), so flushes emit the same updates.
With caching off every record's update is emitted, so built-ins run record by record too.

A combiner (Aggregate with no store: a `PartialsCache`) is the same node before a repartition topic:
what it flushes is partial states, which the aggregation behind the topic merges (`partials_in`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from streams_rt.tasks.execution.base import Exec, SkipCounter, UserCodeError
from streams_rt.tasks.execution.caching import CachedKeyValue, CachedWindows, PartialsCache
from streams_rt.tasks.execution.chunk import Chunk
from streams_rt.topology.aggregators import Builtin
from streams_rt.topology.nodes import REDUCE_START, Aggregate
from streams_rt.topology.windows import TimeWindows

_K, _W, _T, _I = "__key", "__window", "__timestamp", "__index"


def _groups(table: pa.Table, by: list[str], builtin: Builtin, value: str, partials_in: bool) -> list[tuple[Any, ...]]:
    """(group values..., partial, largest timestamp) per group of `table`, ordered by each group's
    last record (as a cache that pops and re-inserts a key on every update leaves them)."""
    prepared = builtin.prepare(table.column(value).combine_chunks(), partials_in)
    for name, column in prepared.items():
        table = table.append_column(name, column)
    grouped = table.group_by(by, use_threads=False).aggregate(
        [*builtin.aggregations(), (_T, "max"), (_I, "max")])
    order = cast(list[int], pc.sort_indices(grouped.column(f"{_I}_max")).to_pylist())
    partials = builtin.assemble(grouped)
    columns = [grouped.column(name).to_pylist() for name in by]
    times = grouped.column(f"{_T}_max").to_pylist()
    return [(*(c[i] for c in columns), partials[i], times[i]) for i in order]



def aggregate_step(initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any], key: Any, value: Any,
                   timestamp: int, current: tuple[Any, int] | None) -> tuple[Any, Any, int]:
    """(old, new, timestamp) of one record's update, as Kafka's KStreamAggregate: a new key's old value
    is the initializer's (a reduce's: none), and the update carries the larger of the record's and the
    stored timestamp."""
    old = initializer() if current is None else current[0]
    new = aggregator(key, value, old)
    return old, new, timestamp if current is None else max(timestamp, current[1])

class AggregateExec(Exec):
    """By key, as Kafka's KStreamAggregate: records with a null key or value are dropped, and an
    update's timestamp is the larger of the record's and the stored aggregate's."""

    def __init__(self, name: str, op: Aggregate, table: CachedKeyValue | PartialsCache) -> None:
        super().__init__(name)
        self.initializer, self.aggregator, self.table = op.initializer, op.aggregator, table
        self.builtin, self.partials_in = op.builtin, op.partials_in
        self.columnar = self.builtin is not None
        self.skipped = SkipCounter(name)

    def process(self, chunk: Chunk) -> None:
        if not self.table.caching:
            self._each(chunk.rows())
        elif self.builtin is not None and self.columnar:
            self._per_key(chunk)
        else:
            self._into_cache(chunk.rows())

    def _each(self, records: list[Any]) -> None:
        table, initializer, aggregator = self.table, self.initializer, self.aggregator
        for record in records:
            key, value, timestamp = record[0], record[1], record[2]
            if key is None or value is None:
                self.skipped.skip("null key or value")
                continue
            current = table.load(key)
            try:
                old, new, timestamp = aggregate_step(initializer, aggregator, key, value, timestamp, current)
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            table.put(key, new, timestamp, None if old is REDUCE_START else old, old_known=True)

    def _into_cache(self, records: list[Any]) -> None:
        """The same with the cache's dict in hand: the hot loop of every aggregation (a key's
        entry is popped and put back, so the least recently written flush first)."""
        table, initializer, aggregator = self.table, self.initializer, self.aggregator
        dirty = table.dirty
        for record in records:
            key, value, timestamp = record[0], record[1], record[2]
            if key is None or value is None:
                self.skipped.skip("null key or value")
                continue
            hit = dirty.pop(key, None)
            current = table.load(key) if hit is None else hit
            try:
                if current is None:
                    new = aggregator(key, value, initializer())
                else:
                    new = aggregator(key, value, current[0])
                    if current[1] > timestamp:
                        timestamp = current[1]
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            dirty[key] = (new, timestamp)
            if hit is None:
                table.added(key, new)  # may flush: the cache then has a new dict
                dirty = table.dirty

    def _per_key(self, chunk: Chunk) -> None:
        """A built-in aggregator over the whole chunk: one partial per key, folded in once."""
        builtin = self.builtin
        assert builtin is not None
        try:
            keys, values = chunk.key.array(), chunk.value.array()
            valid = pc.and_(pc.is_valid(keys), pc.is_valid(values))
            table = pa.table({_K: keys, "v": values, _T: chunk.timestamp.array(),
                              _I: chunk.index.array()}).filter(valid)
            if table.num_rows < len(chunk):
                self.skipped.skip("null key or value", len(chunk) - table.num_rows)
            if not table.num_rows:
                return
            groups = _groups(table, [_K], builtin, "v", self.partials_in)
        except Exception as e:
            raise self._locate(chunk.rows(), lambda r: self._per_key_check(r), e) from e
        table_cache, dirty = self.table, self.table.dirty
        merge = builtin.merge
        for key, partial, timestamp in groups:
            hit = dirty.pop(key, None)
            current = table_cache.load(key) if hit is None else hit
            if current is None:
                new = partial
            else:
                new = merge(current[0], partial)
                if current[1] > timestamp:
                    timestamp = current[1]
            dirty[key] = (new, timestamp)
            if hit is None:
                table_cache.added(key, new)
                dirty = table_cache.dirty

    def _per_key_check(self, record: Any) -> None:
        """The per-batch step on one record (locating a failure)."""
        assert self.builtin is not None
        one = pa.table({_K: pa.array([record[0]]), "v": pa.array([record[1]]), _T: pa.array([record[2]]),
                        _I: pa.array([record[3]])})
        _groups(one, [_K], self.builtin, "v", self.partials_in)


class WindowedAggregateExec(Exec):
    """Per window of each record, as Kafka's KStreamWindowAggregate: records with a null key are
    dropped (a null value reaches the aggregator); a record is late (dropped) for a window that ends
    at or before the stream time this node observed, its own timestamp included, minus the grace
    period; an update's timestamp is the larger of the record's and the stored aggregate's."""

    def __init__(self, name: str, op: Aggregate, spec: TimeWindows, windows: CachedWindows) -> None:
        super().__init__(name)
        self.spec = spec
        self.initializer, self.aggregator, self.windows = op.initializer, op.aggregator, windows
        self.builtin, self.partials_in = op.builtin, op.partials_in
        self.columnar = self.builtin is not None
        self.skipped = SkipCounter(name)

    def process(self, chunk: Chunk) -> None:
        if self.builtin is not None and self.columnar and self.windows.caching:
            self._per_window(chunk)
        else:
            self._each(chunk.rows())

    def _each(self, records: list[Any]) -> None:
        spec, windows, initializer, aggregator = self.spec, self.windows, self.initializer, self.aggregator
        size, grace = spec.size_ms, spec.grace_ms
        drops_null_values = self.builtin is not None and not self.builtin.counts_nulls
        for record in records:
            key, value, timestamp = record[0], record[1], record[2]
            if key is None:
                self.skipped.skip("null key")
                continue
            if timestamp > self.stream_time_ms:
                self.stream_time_ms = timestamp
            if value is None and drops_null_values:
                self.skipped.skip("null value")
                continue
            close = self.stream_time_ms - grace
            for start in spec.starts_for(timestamp):
                if start + size <= close:
                    self.skipped.skip(f"late: window [{start}, {start + size}) closed at stream time "
                                      f"{self.stream_time_ms} with grace {grace} ms")
                    continue
                current = windows.get_timestamped(key, start)
                try:
                    old, new, updated = aggregate_step(initializer, aggregator, key, value, timestamp, current)
                except Exception as e:
                    raise UserCodeError(self.name, record, e) from e
                windows.put(key, start, new, updated, None if old is REDUCE_START else old, old_known=True)

    def _per_window(self, chunk: Chunk) -> None:
        """A built-in aggregator over the whole chunk: each record's windows, the late ones dropped
        by the stream time as it stood at that record, then one partial per (key, window)."""
        builtin = self.builtin
        assert builtin is not None
        try:
            rows = self._windowed_rows(chunk, builtin)
            if rows is None:
                return
            groups = _groups(rows, [_K, _W], builtin, "v", self.partials_in)
        except UserCodeError:
            raise
        except Exception as e:
            raise self._locate(chunk.rows(), lambda r: self._windowed_rows(Chunk.from_rows([r]), builtin), e) from e
        windows, merge = self.windows, builtin.merge
        for key, start, partial, timestamp in groups:
            current = windows.get_timestamped(key, start)
            if current is None:
                new = partial
            else:
                new = merge(current[0], partial)
                if current[1] > timestamp:
                    timestamp = current[1]
            windows.put(key, start, new, timestamp)

    def _windowed_rows(self, chunk: Chunk, builtin: Builtin) -> pa.Table | None:
        """One row per record and window it is on time for (columns key, window start, value,
        timestamp, index); advances this node's stream time."""
        keys = chunk.key.array()
        table = pa.table({_K: keys, "v": chunk.value.array(), _T: chunk.timestamp.array().cast(pa.int64()),
                          _I: chunk.index.array().cast(pa.int64())})
        valid = pc.is_valid(keys)
        table = table.filter(valid)
        if table.num_rows < len(chunk):
            self.skipped.skip("null key", len(chunk) - table.num_rows)
        if not table.num_rows:
            return None
        observed = pc.max_element_wise(pc.cumulative_max(table.column(_T).combine_chunks()), self.stream_time_ms)
        self.stream_time_ms = observed[-1].as_py()
        if not builtin.counts_nulls:
            with_value = pc.is_valid(table.column("v"))
            table, observed = table.filter(with_value), observed.filter(with_value)
            if not table.num_rows:
                return None
        spec = self.spec
        if spec.advance_ms == spec.size_ms:  # tumbling: one window per record (none before the epoch)
            at = table.column(_T)
            nonnegative = pc.greater_equal(at, pa.scalar(0, pa.int64()))
            table, observed = table.filter(nonnegative), observed.filter(nonnegative)
            at = table.column(_T)
            rows = table.append_column(_W, pc.multiply(pc.divide(at, spec.size_ms), spec.size_ms))
            close = observed
        else:
            picks, starts = [], []
            for i, ts in enumerate(cast(list[int], table.column(_T).to_pylist())):
                for start in spec.starts_for(ts):
                    picks.append(i)
                    starts.append(start)
            positions = pa.array(picks, pa.int64())
            rows = table.take(positions).append_column(_W, pa.array(starts, pa.int64()))
            close = observed.take(positions)
        on_time = pc.greater(pc.add(rows.column(_W), spec.size_ms), pc.subtract(close, spec.grace_ms))
        kept = rows.filter(on_time)
        if kept.num_rows < rows.num_rows:
            self.skipped.skip(f"late: windows closed at stream time {self.stream_time_ms} with grace "
                              f"{spec.grace_ms} ms", rows.num_rows - kept.num_rows)
        return kept
