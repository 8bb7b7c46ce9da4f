"""Nodes that run column operations (streams_rt.topology.columns): Arrow kernels over whole columns,
no Python per record. A failure is pinned to its record by running the operation again record by
record (only on that failure path)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from streams_rt.tasks.execution.base import Exec
from streams_rt.tasks.execution.chunk import Chunk, Column
from streams_rt.topology.columns import INDEX, KEY, TIMESTAMP, VALUE, Field, MapBatches, Split, Value, Words
from streams_rt.topology.nodes import Filter, FlatMapValues, MapValues, SelectKey


class _ColumnExec(Exec):
    columnar = True

    def _apply(self, chunk: Chunk, step: Callable[[Chunk], Chunk]) -> None:
        try:
            result = step(chunk)
        except Exception as e:
            raise self._locate(chunk.rows(), lambda r: step(Chunk.from_rows([r])), e) from e
        self.forward(result)


class FilterExpressionExec(_ColumnExec):
    """filter(expression): the records for which a pyarrow.compute expression over key, value and
    timestamp is true (null counts as false, as in SQL)."""

    def __init__(self, name: str, op: Filter) -> None:
        super().__init__(name)
        assert isinstance(op.predicate, pc.Expression)
        self.expression = op.predicate

    def process(self, chunk: Chunk) -> None:
        self._apply(chunk, self._kept)

    def _kept(self, chunk: Chunk) -> Chunk:
        batch = chunk.batch()
        positions = pa.array(range(len(batch)), pa.int64())
        kept = batch.append_column(INDEX, positions).filter(self.expression).column(INDEX)
        if len(kept) == len(batch):
            return chunk
        return chunk.filter(pc.is_in(positions, value_set=kept))


class ExplodeValuesExec(_ColumnExec):
    """flat_map_values(Words()) or flat_map_values(Split(separator))."""

    def __init__(self, name: str, op: FlatMapValues) -> None:
        super().__init__(name)
        assert isinstance(op.mapper, (Words, Split))
        self.operation = op.mapper

    def process(self, chunk: Chunk) -> None:
        self._apply(chunk, self._exploded)

    def _exploded(self, chunk: Chunk) -> Chunk:
        parts, parents = self.operation.explode(chunk.value.array())
        return Chunk(chunk.key.take(parents), Column(array=parts), chunk.timestamp.take(parents),
                     chunk.index.take(parents))


class FieldExec(_ColumnExec):
    """map_values(Field(path)): the value becomes a field of itself; select_key(Field(path)) or
    select_key(Value()): the key becomes a field of the value, or the value."""

    def __init__(self, name: str, op: MapValues | SelectKey) -> None:
        super().__init__(name)
        assert isinstance(op.mapper, (Field, Value))
        self.field, self.to_key = op.mapper, isinstance(op, SelectKey)

    def process(self, chunk: Chunk) -> None:
        self._apply(chunk, self._selected)

    def _selected(self, chunk: Chunk) -> Chunk:
        column = Column(array=self.field.select(chunk.value.array()))
        return chunk.with_key(column) if self.to_key else chunk.with_value(column)


class MapBatchesExec(_ColumnExec):
    """map_batches(fn): see streams_rt.topology.columns.MapBatches."""

    def __init__(self, name: str, op: MapBatches) -> None:
        super().__init__(name)
        self.fn = op.fn

    def process(self, chunk: Chunk) -> None:
        self._apply(chunk, self._mapped)

    def _mapped(self, chunk: Chunk) -> Chunk:
        out = self.fn(chunk.batch())
        if not isinstance(out, pa.RecordBatch):
            raise TypeError(f"map_batches' function must return a pyarrow.RecordBatch, got {type(out).__name__}")
        missing = {KEY, VALUE} - set(out.schema.names)
        if missing:
            raise TypeError(f"map_batches' function returned a batch without {sorted(missing)}")
        same_rows = out.num_rows == len(chunk)
        if TIMESTAMP in out.schema.names:
            timestamps = Column(array=out.column(TIMESTAMP).cast(pa.int64()))
        elif same_rows:
            timestamps = chunk.timestamp
        else:
            raise TypeError("map_batches' function changed the number of rows: its batch needs a timestamp column")
        if same_rows:
            index = chunk.index
        else:  # rows no longer match input records: all are taken as coming from the chunk's last
            last = max(chunk.index.values()) if len(chunk) else -1
            index = Column(array=pa.repeat(last, out.num_rows).cast(pa.int64()))
        return Chunk(Column(array=out.column(KEY)), Column(array=out.column(VALUE)), timestamps, index)
