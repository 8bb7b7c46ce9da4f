"""Bounds-checked big-endian reading and writing of the primitives both user-data formats use.

Every read checks the remaining length first and every count is checked against the bytes left
before anything is allocated, so hostile input fails fast with a MalformedUserData that names the
version and byte offset, never with a MemoryError or a long loop."""

from __future__ import annotations

import struct
import uuid
from typing import Any, TypeVar

from streams_rt.protocol.errors import MalformedUserData
from streams_rt.protocol.strings import MAX_UTF_BYTES, decode_mutf8, encode_mutf8, utf16_units
from streams_rt.protocol.types import MIN_NAMED_TOPOLOGY_VERSION, AssignorError, TaskId

I8 = struct.Struct(">b")
U16 = struct.Struct(">H")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
I32_PAIR = struct.Struct(">ii")

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

T = TypeVar("T")


class Reader:
    """A cursor over one user-data blob; `version` is filled in once it has been read."""

    __slots__ = ("data", "pos", "kind", "version")

    def __init__(self, data: bytes, kind: str) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.kind = kind
        self.version: int | None = None

    def error(self, reason: str, at: int | None = None) -> MalformedUserData:
        return MalformedUserData(self.kind, self.version, self.pos if at is None else at, reason)

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def need(self, n: int, what: str) -> None:
        if n > len(self.data) - self.pos:
            raise self.error(f"truncated: {what} needs {n} bytes, {self.remaining()} left")

    def unpack(self, fmt: struct.Struct, what: str) -> tuple[Any, ...]:
        self.need(fmt.size, what)
        values = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return values

    def i8(self, what: str) -> int:
        value: int = self.unpack(I8, what)[0]
        return value

    def i32(self, what: str) -> int:
        value: int = self.unpack(I32, what)[0]
        return value

    def i64(self, what: str) -> int:
        value: int = self.unpack(I64, what)[0]
        return value

    def count(self, what: str, min_item_bytes: int) -> int:
        """An int32 element count, refused when negative or when the rest cannot hold that many items."""
        at = self.pos
        n = self.i32(f"{what} count")
        if n < 0:
            raise self.error(f"negative {what} count {n}", at)
        if n * min_item_bytes > self.remaining():
            raise self.error(
                f"{what} count {n} needs at least {n * min_item_bytes} bytes, {self.remaining()} left", at
            )
        return n

    def take(self, n: int, what: str) -> bytes:
        self.need(n, what)
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        return raw

    def length_prefixed(self, what: str) -> bytes:
        """Kafka's non-nullable `bytes` field: int32 length, then the bytes."""
        at = self.pos
        n = self.i32(f"{what} length")
        if n < 0:
            raise self.error(f"negative {what} length {n} (field is not nullable)", at)
        if n > self.remaining():
            raise self.error(f"{what} length {n} is past the end ({self.remaining()} bytes left)", at)
        return self.take(n, what)

    def utf8(self, raw: bytes, what: str, at: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"{what} is not valid UTF-8 ({exc.reason})", at + exc.start) from None

    def utf8_field(self, what: str) -> str:
        """A length-prefixed UTF-8 string; a bad byte is reported at its own offset."""
        at = self.pos + 4
        return self.utf8(self.length_prefixed(what), what, at)

    def mutf8(self, what: str) -> str:
        """DataInputStream.readUTF: uint16 length, modified UTF-8."""
        length_at = self.pos
        n = self.unpack(U16, f"{what} length")[0]
        at = self.pos
        if n > self.remaining():
            raise self.error(f"{what} length {n} is past the end ({self.remaining()} bytes left)", length_at)
        raw = self.take(n, what)
        try:
            return decode_mutf8(raw)
        except ValueError as exc:
            raise self.error(f"{what}: {exc}", at) from None

    def utf16(self, n_chars: int, what: str) -> str:
        return self.take(2 * n_chars, what).decode("utf-16-be", "surrogatepass")

    def uuid(self, what: str) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16, what))

    def error_code(self) -> AssignorError:
        """The int32 error code both formats carry; an unknown code is refused at its offset."""
        at = self.pos
        code = self.i32("error code")
        try:
            return AssignorError(code)
        except ValueError:
            raise self.error(f"unknown error code {code}", at) from None

    def end(self) -> None:
        if self.pos != len(self.data):
            raise self.error(f"{self.remaining()} trailing bytes after the last field")


def check_int(value: int, lo: int, hi: int, what: str) -> None:
    """Encode-side range check, so that a value that does not fit is a ValueError and not struct.error."""
    if not lo <= value <= hi:
        raise ValueError(f"{what} {value} does not fit in [{lo}, {hi}]")


def check_task(task: TaskId, version: int) -> None:
    """Encode-side checks of a task id that both formats share (the subscription adds a name length limit)."""
    check_int(task.subtopology, INT32_MIN, INT32_MAX, f"subtopology of task {task}")
    check_int(task.partition, INT32_MIN, INT32_MAX, f"partition of task {task}")
    if task.topology_name is None:
        return
    if version < MIN_NAMED_TOPOLOGY_VERSION:
        raise ValueError(f"named topologies need version {MIN_NAMED_TOPOLOGY_VERSION}+ (task {task}, v{version})")
    if task.topology_name == "":
        raise ValueError("an empty topology name is read back as no topology name; pass None")


def decoded(cls: type[T], **fields: Any) -> T:
    """A frozen dataclass built from fields a decoder has already checked, skipping __post_init__,
    which would validate and copy every task and partition a second time."""
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def mutf8_field(text: str, what: str) -> bytes:
    """writeUTF: uint16 length + modified UTF-8; refuses what writeUTF would refuse."""
    raw = encode_mutf8(text)
    if len(raw) > MAX_UTF_BYTES:
        raise ValueError(f"{what} is {len(raw)} bytes in modified UTF-8; writeUTF allows {MAX_UTF_BYTES}")
    return U16.pack(len(raw)) + raw


def utf16_field(text: str) -> bytes:
    """The assignment's topology name: int32 length in UTF-16 units, then writeChars."""
    units = utf16_units(text)
    return I32.pack(len(units) // 2) + units
