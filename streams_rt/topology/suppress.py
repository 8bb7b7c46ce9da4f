"""KTable#suppress (Kafka Streams' Suppressed, KIP-328): hold a table's updates in a buffer and emit
each key's latest one later. `Suppressed.until_window_closes(...)`: a windowed table's final result
per window, once the window has closed (its end plus the aggregation's grace, by the suppress
node's stream time); `Suppressed.until_time_limit(ms, ...)`: a key's latest update once `ms` of
stream time have passed since the key was first buffered. A key updated while buffered keeps its
place (Kafka's non-resetting buffer). The buffer is a key-value store with a changelog, so it is
restored and kept by standbys as every store is."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from streams_rt.topology.errors import TopologyError
from streams_rt.topology.serdes import Serde


class BufferFull(enum.Enum):
    """What a bounded buffer does when a record would take it over its limit."""

    EMIT_EARLY = "emit_early"  # emit the oldest entries until it fits (not for final results)
    SHUT_DOWN = "shut_down"  # fail the task, as Kafka's shutDownWhenFull


@dataclass(frozen=True)
class BufferConfig:
    """Kafka's BufferConfig by record count: `max_records` None is unbounded. (Kafka's byte bound,
    maxBytes, is not offered: its size estimate is of Java objects.)"""

    max_records: int | None = None
    when_full: BufferFull = BufferFull.EMIT_EARLY

    def __post_init__(self) -> None:
        if self.max_records is not None and self.max_records < 0:
            raise TopologyError("suppress", f"max_records must not be negative, got {self.max_records}")

    @staticmethod
    def unbounded() -> BufferConfig:
        return BufferConfig(None, BufferFull.SHUT_DOWN)

    @staticmethod
    def of_max_records(max_records: int) -> BufferConfig:
        return BufferConfig(max_records)

    def emit_early_when_full(self) -> BufferConfig:
        return BufferConfig(self.max_records, BufferFull.EMIT_EARLY)

    def shut_down_when_full(self) -> BufferConfig:
        return BufferConfig(self.max_records, BufferFull.SHUT_DOWN)


@dataclass(frozen=True)
class Suppressed:
    """How long updates wait: until their window closes (`final_results`) or `time_limit_ms` of
    stream time; `name` names the node (its store: `<name>-store`)."""

    final_results: bool
    time_limit_ms: int
    buffer: BufferConfig
    name: str | None = None

    @staticmethod
    def until_window_closes(buffer: BufferConfig | None = None, name: str | None = None) -> Suppressed:
        """Only each window's final result. The buffer must not emit early (Kafka's strict buffer):
        unbounded, or bounded and shutting down when full."""
        config = buffer or BufferConfig.unbounded()
        if config.max_records is not None and config.when_full is BufferFull.EMIT_EARLY:
            raise TopologyError("suppress", "until_window_closes needs a buffer that never emits early: "
                                            "BufferConfig.unbounded() or .shut_down_when_full()")
        return Suppressed(True, 0, config, name)

    @staticmethod
    def until_time_limit(time_limit_ms: int, buffer: BufferConfig | None = None,
                         name: str | None = None) -> Suppressed:
        """A key's latest update `time_limit_ms` of stream time after it was first buffered (or
        earlier, when a bounded buffer that emits early is full)."""
        if time_limit_ms < 0:
            raise TopologyError("suppress", f"the time limit must not be negative, got {time_limit_ms} ms")
        return Suppressed(False, time_limit_ms, buffer or BufferConfig.unbounded(), name)


@dataclass(frozen=True)
class Suppress:
    """The suppress node's operation: `wait_ms` after each entry's buffer time (a window's end for
    final results, else the record's time when the key was first buffered) it is emitted; for
    final results a delete is dropped rather than emitted (Kafka's safeToDropTombstones)."""

    store: str
    final_results: bool
    wait_ms: int
    buffer: BufferConfig
    key_serde: Serde[Any]
    value_serde: Serde[Any]


class SuppressBufferSerde(Serde[bytes]):
    """The buffer store's bytes, opaque to anything but the suppress node (see
    tasks/execution/suppress.py); the store is not queryable."""

    name = "suppress-buffer"

    def serialize(self, value: bytes | None) -> bytes | None:
        return value

    def deserialize(self, data: bytes | None) -> bytes | None:
        return data
