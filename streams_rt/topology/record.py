"""What flows through a topology: records (key, value, timestamp) and the windowed keys that
windowed aggregations emit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


class Record(NamedTuple):
    """One record: Kafka Streams' `Record` (key, value, timestamp in epoch ms). Immutable; use
    `with_key` / `with_value` / `with_timestamp` to derive another. `source_index` is set by the
    runtime (which input record this one derives from, for error reports); leave it out."""

    key: Any
    value: Any
    timestamp: int
    source_index: int = -1

    def with_key(self, key: Any) -> Record:
        return Record(key, self.value, self.timestamp, self.source_index)

    def with_value(self, value: Any) -> Record:
        return Record(self.key, value, self.timestamp, self.source_index)

    def with_timestamp(self, timestamp: int) -> Record:
        return Record(self.key, self.value, timestamp, self.source_index)


@dataclass(frozen=True, order=True)
class Windowed:
    """A key of a windowed aggregation: the record key and its window [start, end)."""

    key: Any
    start: int
    end: int

    def __str__(self) -> str:
        return f"[{self.key}@{self.start}/{self.end}]"
