"""State stores as a topology declares them: a name (queryable, and the changelog topic's name),
a kind (key-value or window), the serdes its keys and values use, and where it lives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streams_rt.topology.errors import TopologyError
from streams_rt.topology.serdes import Serde, Serdes, TimestampedSerde

_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@dataclass(frozen=True)
class StoreDefinition:
    """`window_size_ms` set: a window store keeping windows for `retention_ms`. `in_memory` keeps
    the store in memory (restored from its changelog on every open) instead of RocksDB.
    `timestamped`: each value is kept with its timestamp (Kafka's timestamped stores, which the DSL's
    tables and aggregations use); the bytes in the store and its changelog are then those of
    `stored_value_serde`. `retain_duplicates`: a window store keeping every put (a stream-stream
    join's); `sessions`: a session store (window size 0: its time is each session's end).
    `queryable`: interactive queries may read it (an operator's internal bookkeeping is not)."""

    name: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    window_size_ms: int | None = None
    retention_ms: int | None = None
    in_memory: bool = False
    timestamped: bool = False
    retain_duplicates: bool = False
    sessions: bool = False
    queryable: bool = True

    def __post_init__(self) -> None:
        check_name(self.name, "store")
        if self.window_size_ms is not None and (self.retention_ms or 0) < self.window_size_ms:
            raise TopologyError(self.name, f"retention ({self.retention_ms} ms) must be at least the "
                                           f"window size ({self.window_size_ms} ms)")

    @property
    def windowed(self) -> bool:
        """Kept in a window store (a session store is one too, by session end)."""
        return self.window_size_ms is not None

    @property
    def kind(self) -> str:
        """"key_value", "window" or "session"."""
        if self.sessions:
            return "session"
        return "window" if self.windowed else "key_value"

    @property
    def stored_value_serde(self) -> Serde[Any]:
        """The serde of the bytes the store keeps: the value serde, behind its timestamp if timestamped."""
        return TimestampedSerde(self.value_serde) if self.timestamped else self.value_serde


def check_name(name: str, what: str) -> None:
    """Names end up in topic names: Kafka's legal characters only, at most 209 of them."""
    if not name or len(name) > 209 or not set(name) <= _LEGAL:
        raise TopologyError(name or "<empty>", f"a {what} name must be 1-209 characters of "
                                               f"[a-zA-Z0-9._-], got {name!r}")


class Stores:
    """Store definitions for the processor API (`KStream.process(..., stores=[...])`)."""

    @staticmethod
    def key_value(name: str, key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None,
                  in_memory: bool = False) -> StoreDefinition:
        return StoreDefinition(name, key_serde or Serdes.bytes(), value_serde or Serdes.bytes(), in_memory=in_memory)

    @staticmethod
    def window(name: str, size_ms: int, retention_ms: int, key_serde: Serde[Any] | None = None,
               value_serde: Serde[Any] | None = None, in_memory: bool = False) -> StoreDefinition:
        return StoreDefinition(name, key_serde or Serdes.bytes(), value_serde or Serdes.bytes(),
                               window_size_ms=size_ms, retention_ms=retention_ms, in_memory=in_memory)
