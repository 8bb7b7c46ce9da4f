"""A task's output rows as Arrow: topic, key, value, timestamp, task. Keys and values take the Arrow
type their output serdes name when every output sink agrees on it (string, int32, int64, or a
windowed key as a struct of key, start and end); otherwise they stay the serialized bytes.
Timestamps are microseconds in UTC, Spark's TIMESTAMP, so Spark takes the batches as they are; the
schema's Spark DDL is `OutputSchema.ddl`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from streams_rt.tasks.execution.nodes import SinkRecord
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

    def to_batch(self, rows: Sequence[SinkRecord], task: str) -> pa.RecordBatch:
        keys: list[Any] = [r[4] for r in rows] if self._key_type is not None else [r[1] for r in rows]
        values = [r[5] for r in rows] if self._value_type is not None else [r[2] for r in rows]
        if self._key_type is not None and pa.types.is_struct(self._key_type):
            keys = [None if k is None else {"key": k.key, "start": k.start * 1000, "end": k.end * 1000} for k in keys]
        return pa.RecordBatch.from_arrays(
            [
                pa.array([r[0] for r in rows], pa.string()),
                pa.array(keys, self.schema.field("key").type),
                pa.array(values, self.schema.field("value").type),
                pa.array([r[3] * 1000 for r in rows], TIMESTAMP),
                pa.array([task] * len(rows), pa.string()),
            ],
            schema=self.schema,
        )


def _ddl(t: pa.DataType) -> str:
    if pa.types.is_struct(t):
        return "STRUCT<" + ", ".join(f"`{f.name}`: {_ddl(f.type)}" for f in t) + ">"
    return _DDL[t]
