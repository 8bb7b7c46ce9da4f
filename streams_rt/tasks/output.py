"""A task's output rows as Arrow: topic, key, value, timestamp, task. Keys and values take the Arrow
type their output serdes name when every output sink agrees on it (string, int32, int64, or a
windowed key as a struct of key, start and end); otherwise they stay the serialized bytes.
Timestamps are microseconds in UTC, Spark's TIMESTAMP, so Spark takes the batches as they are; the
schema's Spark DDL is `OutputSchema.ddl`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute

from streams_rt.tasks.execution.chunk import Column
from streams_rt.tasks.execution.sink import SinkOutput
from streams_rt.topology import Serde, Topology
from streams_rt.topology.windows import WindowedSerde

_SIMPLE: dict[str, pa.DataType] = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64()}
TIMESTAMP = pa.timestamp("us", tz="UTC")  # Spark's TIMESTAMP
_DDL = {pa.string(): "STRING", pa.int32(): "INT", pa.int64(): "BIGINT", pa.binary(): "BINARY", TIMESTAMP: "TIMESTAMP"}


def _arrow_type(serde: Serde[Any]) -> pa.DataType | None:
    if isinstance(serde, WindowedSerde):
        inner = _arrow_type(serde.inner)
        if inner is None:
            return None
        return pa.struct([("key", inner), ("start", TIMESTAMP), ("end", TIMESTAMP)])
    return _SIMPLE.get(serde.arrow_type)


def _column_type(serdes: Sequence[Serde[Any]]) -> pa.DataType | None:
    types = {_arrow_type(s) for s in serdes}
    if len(types) != 1:
        return None
    return types.pop()


class OutputSchema:
    """The schema of a topology's output rows and how to fill it from sink records."""

    def __init__(self, topology: Topology) -> None:
        sinks = topology.output_sinks()
        self._key_type = _column_type([s.key_serde for s in sinks if s.key_serde is not None]) if sinks else None
        self._value_type = _column_type([s.value_serde for s in sinks if s.value_serde is not None]) if sinks else None
        self.schema = pa.schema([
            ("topic", pa.string()),
            ("key", self._key_type or pa.binary()),
            ("value", self._value_type or pa.binary()),
            ("timestamp", TIMESTAMP),
            ("task", pa.string()),
        ])

    @property
    def ddl(self) -> str:
        """The schema in Spark's DDL."""
        return ", ".join(f"`{f.name}` {_ddl(f.type)}" for f in self.schema)

    def empty_table(self) -> pa.Table:
        return self.schema.empty_table()

    def to_batch(self, outputs: Sequence[SinkOutput], task: str) -> pa.RecordBatch:
        """One batch of every output sink's records, in the order written."""
        if not outputs:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        pieces = [self._piece(out, task) for out in outputs]
        return pieces[0] if len(pieces) == 1 else pa.Table.from_batches(pieces).combine_chunks().to_batches()[0]

    def _piece(self, out: SinkOutput, task: str) -> pa.RecordBatch:
        count = len(out.keys)
        millis = pa.array(out.timestamps, pa.int64())
        return pa.RecordBatch.from_arrays(
            [
                pa.repeat(pa.scalar(out.topic, pa.string()), count),
                self._column(out.chunk.key, out.keys, self.schema.field("key").type, self._key_type),
                self._column(out.chunk.value, out.values, self.schema.field("value").type, self._value_type),
                pa.compute.multiply(millis, 1000).cast(TIMESTAMP),
                pa.repeat(pa.scalar(task, pa.string()), count),
            ],
            schema=self.schema,
        )

    @staticmethod
    def _column(column: Column, serialized: list[bytes | None], arrow_type: pa.DataType,
                typed: pa.DataType | None) -> pa.Array[Any]:
        """The typed values where every sink's serde agrees on a type, else the bytes written."""
        if typed is None:
            return pa.array(serialized, pa.binary())
        if pa.types.is_struct(typed):  # windowed keys
            return pa.array([None if k is None else {"key": k.key, "start": k.start * 1000, "end": k.end * 1000}
                             for k in column.values()], arrow_type)
        return column.typed(arrow_type)


def _ddl(t: pa.DataType) -> str:
    if pa.types.is_struct(t):
        return "STRUCT<" + ", ".join(f"`{f.name}`: {_ddl(f.type)}" for f in t) + ">"
    return _DDL[t]
