"""What flows between table operators: a `Change` (the key's new value and, where a downstream
operator asked for it, its old one), as Kafka Streams' `Change<V>`; and `ChangedSerde`, Kafka's
ChangedSerializer format, which carries both through a repartition topic (a grouped table's)."""

from __future__ import annotations

from typing import Any, NamedTuple

from streams_rt.topology.serdes import Serde, SerdeError

# The encoding flag Kafka's ChangedSerializer ends the bytes with (its 3.5+ format, KIP-904).
_OLD_ONLY, _NEW_ONLY, _BOTH = 0, 1, 2


class Change(NamedTuple):
    """A table update: `new` (None: the key was deleted) and `old` (None: unknown, absent, or not
    asked for: a table sends old values only where a downstream operator needs them)."""

    new: Any
    old: Any


class ChangedSerde(Serde[Change]):
    """Kafka's ChangedSerializer/ChangedDeserializer: `{old}{0}`, `{new}{1}`, or
    `{varint len(new)}{new}{old}{2}` (the inner serde's bytes; the varint is Kafka's zig-zag one).
    A change with neither value cannot be written, as in Kafka."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner
        self.name = f"changed({inner.name})"

    def serialize(self, value: Change | None) -> bytes | None:
        if value is None:
            return None
        new = None if value.new is None else self.inner.serialize(value.new)
        old = None if value.old is None else self.inner.serialize(value.old)
        if new is not None and old is not None:
            return write_varint(len(new)) + new + old + bytes([_BOTH])
        if new is not None:
            return new + bytes([_NEW_ONLY])
        if old is not None:
            return old + bytes([_OLD_ONLY])
        raise SerdeError(f"{self.name}: a change with neither a new nor an old value cannot be written")

    def deserialize(self, data: bytes | None) -> Change | None:
        if data is None:
            return None
        if not data:
            raise SerdeError(f"{self.name}: no bytes, not even the encoding flag")
        flag, body = data[-1], data[:-1]
        if flag == _OLD_ONLY:
            return Change(None, self.inner.deserialize(body))
        if flag == _NEW_ONLY:
            return Change(self.inner.deserialize(body), None)
        if flag == _BOTH:
            length, start = read_varint(body)
            if start + length > len(body):
                raise SerdeError(f"{self.name}: the new value's length {length} passes the end")
            return Change(self.inner.deserialize(body[start:start + length]),
                          self.inner.deserialize(body[start + length:]))
        raise SerdeError(f"{self.name}: unknown encoding flag {flag}")

    def __repr__(self) -> str:
        return f"ChangedSerde({self.inner!r})"


def write_varint(value: int) -> bytes:
    """Kafka's ByteUtils.writeVarint: zig-zag, then 7 bits a byte, low bits first."""
    zigzag = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def read_varint(data: bytes, start: int = 0) -> tuple[int, int]:
    """(value, the offset after it): Kafka's ByteUtils.readVarint."""
    raw, shift, at = 0, 0, start
    while True:
        if at >= len(data) or shift > 28:
            raise SerdeError("a varint runs past the end of the bytes or over 5 bytes")
        byte = data[at]
        at += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return (raw >> 1) ^ -(raw & 1), at
