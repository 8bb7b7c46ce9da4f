"""What travels between two nodes of a task: a run of records as columns (key, value, timestamp, and the
index of the input record each came from), each column held in whichever form the last node made it
(Python values, an Arrow array, or the bytes read from Kafka with their serde) and converted only when
a node wants another form. A node that runs Python per record asks for `rows()`; a column operation
asks for arrays; a filter keeps every column in the form it has (so JSON read from a topic and
filtered leaves as the same bytes); a sink whose serde is the one the bytes were read with sends them
as they came."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from streams_rt.topology.columns import KEY, TIMESTAMP, VALUE
from streams_rt.topology.serdes import Serde

# (key, value, timestamp, source index): a record in the record-at-a-time nodes.
Rec = tuple[Any, Any, int, int]


class ColumnTypeError(TypeError):
    """Values a column operation needs as an Arrow column that Arrow cannot hold (mixed types,
    Python objects): the operation's node names them."""


class Column:
    """One column: Python values, an Arrow array, or serialized bytes and their serde; each form is
    made at most once."""

    __slots__ = ("_array", "_raw", "_serde", "_values")

    def __init__(self, values: list[Any] | None = None, array: pa.Array[Any] | None = None,
                 raw: list[bytes | None] | None = None, serde: Serde[Any] | None = None) -> None:
        self._values, self._array, self._raw, self._serde = values, array, raw, serde

    def __len__(self) -> int:
        if self._values is not None:
            return len(self._values)
        if self._array is not None:
            return len(self._array)
        assert self._raw is not None
        return len(self._raw)

    def values(self) -> list[Any]:
        if self._values is None:
            if self._raw is not None:
                assert self._serde is not None
                self._values = self._serde.deserialize_many(self._raw)
            else:
                assert self._array is not None
                self._values = self._array.to_pylist()
        return self._values

    def array(self) -> pa.Array[Any]:
        if self._array is None:
            try:
                if self._raw is not None:
                    assert self._serde is not None
                    self._array = self._serde.to_arrow(self._raw)
                else:
                    self._array = pa.array(self.values())
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
                sample = ", ".join(repr(v)[:40] for v in self.values()[:3])
                raise ColumnTypeError(f"values that are not one Arrow type ({sample}, ...): {e}; a column "
                                      f"operation needs one (a Python function takes any)") from None
        return self._array

    def typed(self, arrow_type: pa.DataType) -> pa.Array[Any]:
        """The column as an Arrow array of `arrow_type` (output rows)."""
        if self._array is not None:
            return self._array if self._array.type == arrow_type else self._array.cast(arrow_type)
        return pa.array(self.values(), arrow_type)

    def serialized(self, serde: Serde[Any]) -> list[bytes | None]:
        """The column's bytes under `serde`: the bytes it was read as when `serde` is the same kind
        of serde, else serialized (from Arrow when that is the form at hand)."""
        if self._raw is not None and self._serde is not None and _same_serde(self._serde, serde):
            return self._raw
        if self._values is None and self._array is not None:
            return serde.from_arrow(self._array)
        return serde.serialize_many(self.values())

    def filter(self, mask: pa.BooleanArray, keep: list[int]) -> Column:
        """The rows where `mask` holds (`keep`: their positions), in every form the column has."""
        return Column(
            values=None if self._values is None else [self._values[i] for i in keep],
            array=None if self._array is None else self._array.filter(mask),
            raw=None if self._raw is None else [self._raw[i] for i in keep],
            serde=self._serde,
        )

    def take(self, positions: pa.Array[Any]) -> Column:
        """The rows at `positions` (repeats allowed), in the forms that make it cheaply."""
        if self._array is not None:
            return Column(array=self._array.take(positions))
        picks = cast(list[int], positions.to_pylist())
        if self._raw is not None:
            return Column(raw=[self._raw[i] for i in picks], serde=self._serde)
        values = self.values()
        return Column(values=[values[i] for i in picks])


def _same_serde(a: Serde[Any], b: Serde[Any]) -> bool:
    """Serdes that write the same bytes: the same built-in kind (a serde with state of its own,
    such as a windowed one, is never taken for another)."""
    return type(a) is type(b) and not vars(a) and not vars(b)


class Chunk:
    """Records between two nodes (see the module docstring)."""

    __slots__ = ("_rows", "index", "key", "timestamp", "value")

    def __init__(self, key: Column, value: Column, timestamp: Column, index: Column) -> None:
        self.key, self.value, self.timestamp, self.index = key, value, timestamp, index
        self._rows: list[Rec] | None = None

    @staticmethod
    def from_rows(rows: list[Rec]) -> Chunk:
        keys, values, timestamps, indexes = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
        chunk = Chunk(Column(keys), Column(values), Column(timestamps), Column(indexes))
        chunk._rows = rows
        return chunk

    @staticmethod
    def from_arrays(key: pa.Array[Any], value: pa.Array[Any], timestamp: pa.Array[Any], index: pa.Array[Any]) -> Chunk:
        return Chunk(Column(array=key), Column(array=value), Column(array=timestamp), Column(array=index))

    def __len__(self) -> int:
        return len(self.index)

    def rows(self) -> list[Rec]:
        if self._rows is None:
            self._rows = list(zip(self.key.values(), self.value.values(), self.timestamp.values(),
                                  self.index.values(), strict=True))
        return self._rows

    def batch(self) -> pa.RecordBatch:
        """key, value and timestamp as Arrow (what an expression or map_batches sees)."""
        return pa.RecordBatch.from_arrays([self.key.array(), self.value.array(), self.timestamp.array()],
                                          [KEY, VALUE, TIMESTAMP])

    def filter(self, mask: pa.BooleanArray) -> Chunk:
        """The records where `mask` is true (null counts as false), every column kept in its forms."""
        mask = cast(pa.BooleanArray, pc.fill_null(mask, pa.scalar(False)))
        keep = list(itertools.compress(range(len(mask)), mask.to_pylist()))
        chunk = Chunk(self.key.filter(mask, keep), self.value.filter(mask, keep),
                      self.timestamp.filter(mask, keep), self.index.filter(mask, keep))
        if self._rows is not None:
            chunk._rows = [self._rows[i] for i in keep]
        return chunk

    def with_value(self, value: Column) -> Chunk:
        return Chunk(self.key, value, self.timestamp, self.index)

    def with_key(self, key: Column) -> Chunk:
        return Chunk(key, self.value, self.timestamp, self.index)

    def take(self, positions: pa.Array[Any]) -> Chunk:
        return Chunk(self.key.take(positions), self.value.take(positions), self.timestamp.take(positions),
                     self.index.take(positions))

    def singles(self) -> Sequence[Chunk]:
        """One chunk per record, in order (depth-first runs)."""
        return [Chunk.from_rows([row]) for row in self.rows()]
