"""Column operations: functions the DSL runs on a whole batch of records at once (Arrow arrays, by
pyarrow.compute's kernels) instead of calling Python once per record. Pass one where the DSL takes a
function:

    lines.flat_map_values(Words())                  # split on whitespace, as str.split()
         .filter(pc.field("value") != "the")        # any pyarrow.compute expression over key, value, timestamp
         .map_values(Field("user.id"))              # a field of a JSON (struct) value
         .select_key(Field("user"))                 # or Value(): the value itself becomes the key
    stream.map_batches(fn)                          # fn(pyarrow.RecordBatch) -> pyarrow.RecordBatch

Each has one meaning, given by its Arrow kernel: where a record must run alone (a node whose paths
meet again runs depth-first), the same kernel runs on a batch of one. A plain Python function keeps
working beside them; only its node pays per record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# What a batch between nodes holds: the record's key, value, timestamp (epoch ms) and, for the
# runtime, the index of the input record it came from.
KEY, VALUE, TIMESTAMP, INDEX = "key", "value", "timestamp", "index"


class ColumnOperation:
    """An operation on whole columns; subclasses say what it does to the value (or the key)."""

    name = "column operation"


@dataclass(frozen=True)
class Words(ColumnOperation):
    """For flat_map_values: each whitespace-separated word of a string value, as str.split() with no
    argument splits ASCII text (Arrow's utf8_split_whitespace: Unicode White_Space separates). A null
    value gives no record."""

    name = "words"

    def explode(self, values: pa.Array[Any]) -> tuple[pa.Array[Any], pa.Array[Any]]:
        """(the words, the index of the value each came from)."""
        lists = pc.utf8_split_whitespace(_strings(values, self.name))
        return _flatten_non_empty(lists)


@dataclass(frozen=True)
class Split(ColumnOperation):
    """For flat_map_values: the parts of a string value between occurrences of `separator`, as
    str.split(separator) (empty parts kept). A null value gives no record."""

    separator: str
    name = "split"

    def __post_init__(self) -> None:
        if not self.separator:
            raise ValueError("Split needs a non-empty separator (Words() splits on whitespace)")

    def explode(self, values: pa.Array[Any]) -> tuple[pa.Array[Any], pa.Array[Any]]:
        lists = pc.split_pattern(_strings(values, self.name), self.separator)
        return pc.list_flatten(lists), pc.list_parent_indices(lists)


@dataclass(frozen=True)
class Field(ColumnOperation):
    """For map_values or select_key: the field at `path` (dots between nested names) of a JSON value
    (an Arrow struct); null where the value is null or has no such field."""

    path: str
    name = "field"

    def __post_init__(self) -> None:
        if not self.path or any(not part for part in self.path.split(".")):
            raise ValueError(f"Field needs a dotted path of names, got {self.path!r}")

    def select(self, values: pa.Array[Any]) -> pa.Array[Any]:
        current = values
        for part in self.path.split("."):
            if not pa.types.is_struct(current.type):
                raise TypeError(f"Field({self.path!r}): {part!r} is asked of a {current.type} value, not a struct")
            if current.type.get_field_index(part) < 0:
                return pa.nulls(len(values))
            current = pc.struct_field(current, part)
        return current


@dataclass(frozen=True)
class Value(ColumnOperation):
    """For select_key or group_by: the value itself becomes the key (a word count's re-key)."""

    name = "value"

    def select(self, values: pa.Array[Any]) -> pa.Array[Any]:
        return values


@dataclass(frozen=True)
class MapBatches(ColumnOperation):
    """KStream.map_batches: `fn` takes a pyarrow.RecordBatch with columns key, value, timestamp and
    returns one with key and value (and timestamp, else each row keeps its input's: then the row
    count must not change), with as many rows as it likes (Spark's mapInArrow shape)."""

    fn: Callable[[pa.RecordBatch], pa.RecordBatch]
    name = "map_batches"


def _strings(values: pa.Array[Any], operation: str) -> pa.Array[Any]:
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values
    if pa.types.is_null(values.type):
        return values.cast(pa.string())
    raise TypeError(f"{operation} needs string values, got {values.type}")


def _flatten_non_empty(lists: pa.Array[Any]) -> tuple[pa.Array[Any], pa.Array[Any]]:
    words, parents = pc.list_flatten(lists), pc.list_parent_indices(lists)
    keep = pc.not_equal(words, pa.scalar("", words.type))
    return words.filter(keep), parents.filter(keep)
