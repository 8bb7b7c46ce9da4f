"""Windows for windowed aggregations, as Kafka Streams': time windows (tumbling and hopping),
session windows and sliding windows, each with a grace period after which late records are
dropped; when a windowed aggregation emits (EmitStrategy); and the key serdes of windowed results."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from streams_rt.topology.errors import TopologyError
from streams_rt.topology.record import Windowed
from streams_rt.topology.serdes import Serde, SerdeError

_TS_BYTES = 8


@dataclass(frozen=True)
class TimeWindows:
    """Windows of `size_ms` starting every `advance_ms` (tumbling: advance == size), aligned to the
    epoch. A record belongs to every window [start, start + size) that contains its timestamp."""

    size_ms: int
    advance_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.size_ms <= 0:
            raise TopologyError("windows", f"window size must be positive, got {self.size_ms} ms")
        if not 0 < self.advance_ms <= self.size_ms:
            raise TopologyError("windows", f"advance must be in (0, size], got {self.advance_ms} ms "
                                           f"for a {self.size_ms} ms window")
        if self.grace_ms < 0:
            raise TopologyError("windows", f"grace must not be negative, got {self.grace_ms} ms")

    def starts_for(self, timestamp: int) -> range:
        """The starts of every window holding `timestamp`, oldest first (none before the epoch), as
        Kafka's TimeWindows.windowsFor."""
        first = max(0, timestamp - self.size_ms + self.advance_ms) // self.advance_ms * self.advance_ms
        return range(first, timestamp + 1, self.advance_ms)

    @property
    def default_retention_ms(self) -> int:
        """Kafka's default for a windowed store: size plus grace."""
        return self.size_ms + self.grace_ms


def TumblingWindows(size_ms: int, grace_ms: int = 0) -> TimeWindows:  # noqa: N802 - reads as a type
    return TimeWindows(size_ms, size_ms, grace_ms)


def HoppingWindows(size_ms: int, advance_ms: int, grace_ms: int = 0) -> TimeWindows:  # noqa: N802
    return TimeWindows(size_ms, advance_ms, grace_ms)


class WindowedSerde(Serde[Windowed]):
    """Kafka's TimeWindowedSerde: the inner key's bytes, then the window start as 8 big-endian bytes;
    the end is start + size. Output rows carry the key as a struct (key, start, end)."""

    def __init__(self, inner: Serde[Any], size_ms: int) -> None:
        self.inner, self.size_ms = inner, size_ms
        self.name = f"windowed({inner.name})"
        self.arrow_type = f"windowed<{inner.arrow_type}>"

    def serialize(self, value: Windowed | None) -> bytes | None:
        if value is None:
            return None
        key = self.inner.serialize(value.key)
        return (key or b"") + value.start.to_bytes(_TS_BYTES, "big", signed=True)

    def deserialize(self, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        if len(data) < _TS_BYTES:
            raise SerdeError(f"{self.name}: {len(data)} bytes cannot hold a window start")
        start = int.from_bytes(data[-_TS_BYTES:], "big", signed=True)
        return Windowed(self.inner.deserialize(data[:-_TS_BYTES]), start, start + self.size_ms)

    def __repr__(self) -> str:
        return f"WindowedSerde({self.inner!r}, {self.size_ms})"


@dataclass(frozen=True)
class SessionWindows:
    """Kafka's SessionWindows: a key's records closer than `gap_ms` to each other form one session
    [first, last]; a record between two sessions merges them. A record is dropped when its session
    would end before the stream time minus grace minus the gap."""

    gap_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.gap_ms <= 0:
            raise TopologyError("session windows", f"the inactivity gap must be positive, got {self.gap_ms} ms")
        if self.grace_ms < 0:
            raise TopologyError("session windows", f"grace must not be negative, got {self.grace_ms} ms")

    @staticmethod
    def of_inactivity_gap_and_grace(gap_ms: int, grace_ms: int) -> SessionWindows:
        return SessionWindows(gap_ms, grace_ms)

    @staticmethod
    def of_inactivity_gap_with_no_grace(gap_ms: int) -> SessionWindows:
        return SessionWindows(gap_ms, 0)

    @property
    def default_retention_ms(self) -> int:
        """Kafka's default for a session store: gap plus grace."""
        return self.gap_ms + self.grace_ms

    @property
    def close_delay_ms(self) -> int:
        """How long after a session's end it closes (what `suppress(until_window_closes)` waits)."""
        return self.gap_ms + self.grace_ms


@dataclass(frozen=True)
class SlidingWindows:
    """Kafka's SlidingWindows (KIP-450): windows of `time_difference_ms` (both ends included) that
    move with the records: every distinct set of a key's records within the time difference gets
    one window, [t - difference, t] for each record at t and [t + 1, t + 1 + difference] after it."""

    time_difference_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.time_difference_ms < 0:
            raise TopologyError("sliding windows", f"the time difference must not be negative, got "
                                                   f"{self.time_difference_ms} ms")
        if self.grace_ms < 0:
            raise TopologyError("sliding windows", f"grace must not be negative, got {self.grace_ms} ms")

    @staticmethod
    def of_time_difference_and_grace(time_difference_ms: int, grace_ms: int) -> SlidingWindows:
        return SlidingWindows(time_difference_ms, grace_ms)

    @staticmethod
    def of_time_difference_with_no_grace(time_difference_ms: int) -> SlidingWindows:
        return SlidingWindows(time_difference_ms, 0)

    @property
    def default_retention_ms(self) -> int:
        """Kafka's default for a sliding window store: twice the time difference plus grace."""
        return 2 * self.time_difference_ms + self.grace_ms


class EmitStrategy(enum.Enum):
    """When a windowed aggregation emits (KIP-825): every update of a window (Kafka's default), or
    each window's final result once, when it closes (its end plus grace has passed)."""

    ON_WINDOW_UPDATE = "on_window_update"
    ON_WINDOW_CLOSE = "on_window_close"

    @staticmethod
    def on_window_update() -> EmitStrategy:
        return EmitStrategy.ON_WINDOW_UPDATE

    @staticmethod
    def on_window_close() -> EmitStrategy:
        return EmitStrategy.ON_WINDOW_CLOSE


class SessionWindowedSerde(Serde[Windowed]):
    """Kafka's SessionWindowedSerde: the inner key's bytes, then the session's end and start, 8
    bytes big-endian each."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner
        self.name = f"session-windowed({inner.name})"
        self.arrow_type = f"windowed<{inner.arrow_type}>"

    def serialize(self, value: Windowed | None) -> bytes | None:
        if value is None:
            return None
        key = self.inner.serialize(value.key)
        return ((key or b"") + value.end.to_bytes(_TS_BYTES, "big", signed=True)
                + value.start.to_bytes(_TS_BYTES, "big", signed=True))

    def deserialize(self, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        if len(data) < 2 * _TS_BYTES:
            raise SerdeError(f"{self.name}: {len(data)} bytes cannot hold a session's end and start")
        end = int.from_bytes(data[-2 * _TS_BYTES:-_TS_BYTES], "big", signed=True)
        start = int.from_bytes(data[-_TS_BYTES:], "big", signed=True)
        return Windowed(self.inner.deserialize(data[:-2 * _TS_BYTES]), start, end)

    def __repr__(self) -> str:
        return f"SessionWindowedSerde({self.inner!r})"
