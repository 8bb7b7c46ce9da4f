"""Time windows for windowed aggregations (Kafka Streams' TimeWindows): tumbling and hopping, with
a grace period after which late records are dropped, and the key serde of windowed results."""

from __future__ import annotations

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
