"""Stream-stream joins (Kafka Streams' KStream#join, leftJoin and outerJoin with JoinWindows): each side
keeps its records in a window store that retains duplicates, and each record is joined with the
other side's records within the join window. Left and outer joins hold a record that found no
partner in a shared "outer" store until its window closes (its time plus the window's far side plus
grace, by the join's stream time), and only then emit it joined with None: Kafka 3.1's fix of the
spurious left/outer results (a record joined with None at once, then with its partner).

The nodes are Kafka's: a `KSTREAM-WINDOWED` node per side (stores each record, forwards it), a join
node per side (`KSTREAM-JOINTHIS`/`-OUTERTHIS`, `KSTREAM-JOINOTHER`/`-OUTEROTHER`) reading the other
side's store, and a `KSTREAM-MERGE` of the two; the stores are named as Kafka names them."""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams_rt.topology.errors import TopologyError
from streams_rt.topology.serdes import Serde, SerdeError
from streams_rt.topology.stores import StoreDefinition

_LONG = struct.Struct(">q")
_LENGTH = struct.Struct(">I")


@dataclass(frozen=True)
class JoinWindows:
    """Kafka's JoinWindows: a record of the left stream at time t joins the right stream's records in
    [t - before_ms, t + after_ms] (one of the two may be negative, not their sum); records later than
    `grace_ms` after a window's end are dropped by the window stores' retention."""

    before_ms: int
    after_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.before_ms + self.after_ms < 0:
            raise TopologyError("join windows", f"the window (before + after) must not be negative, got "
                                                f"before {self.before_ms} ms and after {self.after_ms} ms")
        if self.grace_ms < 0:
            raise TopologyError("join windows", f"grace must not be negative, got {self.grace_ms} ms")

    @staticmethod
    def of_time_difference_and_grace(time_difference_ms: int, grace_ms: int) -> JoinWindows:
        """Records at most `time_difference_ms` apart join; `grace_ms` for out-of-order records."""
        return JoinWindows(time_difference_ms, time_difference_ms, grace_ms)

    @staticmethod
    def of_time_difference_with_no_grace(time_difference_ms: int) -> JoinWindows:
        return JoinWindows(time_difference_ms, time_difference_ms, 0)

    def before(self, time_difference_ms: int) -> JoinWindows:
        """How far before a left record right records may be."""
        return JoinWindows(time_difference_ms, self.after_ms, self.grace_ms)

    def after(self, time_difference_ms: int) -> JoinWindows:
        """How far after a left record right records may be."""
        return JoinWindows(self.before_ms, time_difference_ms, self.grace_ms)

    @property
    def size_ms(self) -> int:
        return self.before_ms + self.after_ms

    @property
    def retention_ms(self) -> int:
        """The window stores' retention (and the outer store's horizon): size plus grace, as Kafka."""
        return self.size_ms + self.grace_ms


class JoinKind(enum.Enum):
    INNER = "inner"
    LEFT = "left"
    OUTER = "outer"


# ---- operations --------------------------------------------------------------------------------
@dataclass(frozen=True)
class JoinWindowPut:
    """Kafka's KStreamJoinWindow: forwards each record, then keeps it (if it has a key) in `store`."""

    store: str


@dataclass(frozen=True)
class StreamStreamJoin:
    """One side's join node (Kafka's KStreamKStreamJoinLeftSide / RightSide). `joiner(left value,
    right value)` whichever side this is; `outer`: this side's records without a partner are emitted
    joined with None (held in `outer_store`, if any, until their window closes). `join_id` names the
    join: its two sides share one stream time per task."""

    join_id: str
    left_side: bool
    other_store: str
    outer_store: str | None
    joiner: Callable[[Any, Any], Any]
    outer: bool
    windows: JoinWindows
    key_serde: Serde[Any]
    left_value_serde: Serde[Any]
    right_value_serde: Serde[Any]

    @property
    def before_ms(self) -> int:
        """How far back this side looks in the other side's store."""
        return self.windows.before_ms if self.left_side else self.windows.after_ms

    @property
    def after_ms(self) -> int:
        return self.windows.after_ms if self.left_side else self.windows.before_ms


# ---- the outer store's bytes (Kafka's TimestampedKeyAndJoinSide and lists of LeftOrRightValue) ----
class OuterJoinKeySerde(Serde[tuple[int, bool, Any]]):
    """(timestamp, is_left, key) as `<timestamp, 8 bytes big-endian><1 if left else 0><key>`: the
    store iterates in time order, right before left at one time, as Kafka's."""

    def __init__(self, keys: Serde[Any]) -> None:
        self.keys = keys
        self.name = f"outer-join-key({keys.name})"

    def serialize(self, value: tuple[int, bool, Any] | None) -> bytes | None:
        if value is None:
            return None
        timestamp, is_left, key = value
        return _LONG.pack(timestamp) + (b"\x01" if is_left else b"\x00") + (self.keys.serialize(key) or b"")

    def deserialize(self, data: bytes | None) -> tuple[int, bool, Any] | None:
        if data is None:
            return None
        if len(data) < 9:
            raise SerdeError(f"{self.name}: {len(data)} bytes cannot hold a timestamp and a side")
        return _LONG.unpack_from(data)[0], data[8] == 1, self.keys.deserialize(data[9:])


class LeftOrRightListSerde(Serde[list[tuple[bool, Any]]]):
    """The records one (time, side, key) holds, in arrival order: per record `<length, 4 bytes><1 if
    left else 0><value>`."""

    def __init__(self, left: Serde[Any], right: Serde[Any]) -> None:
        self.left, self.right = left, right
        self.name = f"left-or-right({left.name}, {right.name})"

    def serialize(self, value: list[tuple[bool, Any]] | None) -> bytes | None:
        if value is None:
            return None
        return b"".join(self.entry(is_left, v) for is_left, v in value)

    def entry(self, is_left: bool, value: Any) -> bytes:
        data = (self.left if is_left else self.right).serialize(value) or b""
        return _LENGTH.pack(len(data) + 1) + (b"\x01" if is_left else b"\x00") + data

    def deserialize(self, data: bytes | None) -> list[tuple[bool, Any]] | None:
        if data is None:
            return None
        found, at = [], 0
        while at < len(data):
            if at + 5 > len(data):
                raise SerdeError(f"{self.name}: truncated entry at byte {at}")
            (length,) = _LENGTH.unpack_from(data, at)
            is_left = data[at + 4] == 1
            found.append((is_left, (self.left if is_left else self.right).deserialize(data[at + 5:at + 4 + length])))
            at += 4 + length
        return found


@dataclass(frozen=True)
class JoinPlan:
    """The names and stores of one stream-stream join, as Kafka's KStreamImplJoin makes them."""

    this_windowed: str
    other_windowed: str
    this_join: str
    other_join: str
    merge: str
    stores: tuple[StoreDefinition, ...]
    this_store: str
    other_store: str
    outer_store: str | None


def plan_join(new_name: Callable[[str], str], kind: JoinKind, windows: JoinWindows, key_serde: Serde[Any],
              left_values: Serde[Any], right_values: Serde[Any], name: str | None,
              store_name: str | None) -> JoinPlan:
    """Node and store names in Kafka's order (so the counter gives every later node Kafka's name):
    `new_name(prefix)` draws the next generated name. `name`: StreamJoined's name (the processors'
    base); `store_name`: its store name (the stores' base)."""
    left_outer, right_outer = kind is not JoinKind.INNER, kind is JoinKind.OUTER
    this_suffix = "-outer-this-join" if right_outer else "-this-join"
    other_suffix = "-outer-other-join" if left_outer else "-other-join"
    this_windowed = f"{name}-this-windowed" if name else new_name("KSTREAM-WINDOWED")
    other_windowed = f"{name}-other-windowed" if name else new_name("KSTREAM-WINDOWED")
    this_prefix = "KSTREAM-OUTERTHIS" if right_outer else "KSTREAM-JOINTHIS"
    this_generated = new_name(this_prefix)
    other_generated = new_name("KSTREAM-OUTEROTHER" if left_outer else "KSTREAM-JOINOTHER")
    this_join = f"{name}{this_suffix}" if name else this_generated
    other_join = f"{name}{other_suffix}" if name else other_generated
    merge = f"{name}-merge" if name else new_name("KSTREAM-MERGE")
    this_store = (f"{store_name}{this_suffix}" if store_name else this_generated) + "-store"
    other_store = (f"{store_name}{other_suffix}" if store_name else other_generated) + "-store"
    size, retention = windows.size_ms, windows.retention_ms
    stores = [
        StoreDefinition(this_store, key_serde, left_values, window_size_ms=size, retention_ms=retention,
                        timestamped=True, retain_duplicates=True),
        StoreDefinition(other_store, key_serde, right_values, window_size_ms=size, retention_ms=retention,
                        timestamped=True, retain_duplicates=True),
    ]
    outer_store = None
    if left_outer:
        shared = "-outer-shared-join" if right_outer else "-left-shared-join"
        number = this_generated[len(this_prefix) + 1:]
        outer_store = (f"{store_name}{shared}" if store_name else f"KSTREAM-OUTERSHARED-{number}") + "-store"
        stores.append(StoreDefinition(outer_store, OuterJoinKeySerde(key_serde),
                                      LeftOrRightListSerde(left_values, right_values), queryable=False))
    return JoinPlan(this_windowed, other_windowed, this_join, other_join, merge, tuple(stores), this_store,
                    other_store, outer_store)


def join_sides(plan: JoinPlan, kind: JoinKind, joiner: Callable[[Any, Any], Any], windows: JoinWindows,
               key_serde: Serde[Any], left_values: Serde[Any],
               right_values: Serde[Any]) -> tuple[StreamStreamJoin, StreamStreamJoin]:
    """The two join nodes' operations: the left side reads the right side's store and the other way
    round; a left join's left side and an outer join's both sides emit records without a partner."""
    common: dict[str, Any] = {"join_id": plan.merge, "outer_store": plan.outer_store, "joiner": joiner,
                              "windows": windows, "key_serde": key_serde, "left_value_serde": left_values,
                              "right_value_serde": right_values}
    left = StreamStreamJoin(left_side=True, other_store=plan.other_store, outer=kind is not JoinKind.INNER,
                            **common)
    right = StreamStreamJoin(left_side=False, other_store=plan.this_store, outer=kind is JoinKind.OUTER,
                             **common)
    return left, right

