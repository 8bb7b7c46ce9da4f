"""Serdes: how keys and values become bytes on topics and in stores. The formats are Kafka's own
(its StringSerializer, IntegerSerializer and LongSerializer are big-endian), so topics written here
read the same from a Java client. Each serde also names the Arrow type its values take in output
rows, so Spark sees typed columns where the serde is known."""

from __future__ import annotations

import io
import json
import re
import struct
from typing import Any, Generic, TypeGuard, TypeVar

import orjson
import pyarrow as pa
import pyarrow.json as pa_json

T = TypeVar("T")


class SerdeError(ValueError):
    """Bytes that a serde cannot read, or a value it cannot write; says which serde and why."""


class Serde(Generic[T]):
    """serialize(value) -> bytes and deserialize(bytes) -> value; None passes through both (a
    tombstone). `arrow_type` is the pyarrow type name of deserialized values ('binary' when none)."""

    name = "serde"
    arrow_type = "binary"

    def serialize(self, value: T | None) -> bytes | None:
        raise NotImplementedError

    def deserialize(self, data: bytes | None) -> T | None:
        raise NotImplementedError

    def serialize_many(self, values: list[Any]) -> list[bytes | None]:
        """`serialize` over a list (serdes override it where a loop in C does the same)."""
        return list(map(self.serialize, values))

    def deserialize_many(self, data: list[bytes | None]) -> list[Any]:
        """`deserialize` over a list (serdes override it where a loop in C does the same)."""
        return list(map(self.deserialize, data))

    def to_arrow(self, data: list[bytes | None]) -> pa.Array[Any]:
        """A column of deserialized values (serdes override it to skip the Python objects)."""
        column: pa.Array[Any] = pa.array(self.deserialize_many(data))
        return column

    def from_arrow(self, column: pa.Array[Any]) -> list[bytes | None]:
        """`serialize` over a column (serdes override it to skip the Python objects)."""
        return self.serialize_many(column.to_pylist())

    def __repr__(self) -> str:
        return f"Serdes.{self.name}()"


class BytesSerde(Serde[bytes]):
    name = "bytes"

    def serialize(self, value: bytes | None) -> bytes | None:
        if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
            raise SerdeError(f"bytes serde: expected bytes, got {type(value).__name__}")
        return None if value is None else bytes(value)

    def deserialize(self, data: bytes | None) -> bytes | None:
        return data

    def deserialize_many(self, data: list[bytes | None]) -> list[Any]:
        return data

    def to_arrow(self, data: list[bytes | None]) -> pa.Array[Any]:
        return pa.array(data, pa.binary())

    def from_arrow(self, column: pa.Array[Any]) -> list[bytes | None]:
        if not pa.types.is_binary(column.type):
            raise SerdeError(f"bytes serde: expected a binary column, got {column.type}")
        return column.to_pylist()


class StringSerde(Serde[str]):
    name = "string"
    arrow_type = "string"

    def serialize(self, value: str | None) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise SerdeError(f"string serde: expected str, got {type(value).__name__}")
        return value.encode("utf-8")

    def deserialize(self, data: bytes | None) -> str | None:
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SerdeError(f"string serde: not UTF-8 at byte {e.start}") from None

    def serialize_many(self, values: list[Any]) -> list[bytes | None]:
        if None in values or not all(type(v) is str for v in values):
            return super().serialize_many(values)  # None, or a wrong type: one by one, with the error
        return list(map(str.encode, values))

    def deserialize_many(self, data: list[bytes | None]) -> list[Any]:
        if _no_none(data):
            try:
                return list(map(bytes.decode, data))
            except UnicodeDecodeError:
                pass  # one by one below: that raises, naming the byte
        return super().deserialize_many(data)

    def to_arrow(self, data: list[bytes | None]) -> pa.Array[Any]:
        try:  # no str per record: the bytes are checked as UTF-8 and taken as they are
            return pa.array(data, pa.binary()).cast(pa.string())
        except pa.ArrowInvalid:
            return pa.array(self.deserialize_many(data), pa.string())  # raises, naming the byte

    def from_arrow(self, column: pa.Array[Any]) -> list[bytes | None]:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            return column.cast(pa.binary()).to_pylist()
        return super().from_arrow(column)


class _FixedIntSerde(Serde[int]):
    width = 8
    code = "q"

    def serialize(self, value: int | None) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise SerdeError(f"{self.name} serde: expected int, got {type(value).__name__}")
        try:
            return value.to_bytes(self.width, "big", signed=True)
        except OverflowError:
            raise SerdeError(f"{self.name} serde: {value} does not fit in {self.width * 8} bits") from None

    def deserialize(self, data: bytes | None) -> int | None:
        if data is None:
            return None
        if len(data) != self.width:
            raise SerdeError(f"{self.name} serde: expected {self.width} bytes, got {len(data)}")
        return int.from_bytes(data, "big", signed=True)

    def to_arrow(self, data: list[bytes | None]) -> pa.Array[Any]:
        width = self.width
        if _no_none(data) and all(len(d) == width for d in data):  # one C call for the whole column
            return pa.array(struct.unpack(f">{len(data)}{self.code}", b"".join(data)), _ARROW_INTS[self.code])
        return pa.array(self.deserialize_many(data), _ARROW_INTS[self.code])

    def from_arrow(self, column: pa.Array[Any]) -> list[bytes | None]:
        if column.null_count or not pa.types.is_integer(column.type):
            return super().from_arrow(column)
        values = column.to_pylist()
        try:
            packed = struct.pack(f">{len(values)}{self.code}", *values)
        except struct.error:
            return super().from_arrow(column)  # out of range: one by one, naming the value
        width = self.width
        return [packed[i:i + width] for i in range(0, len(packed), width)]


class IntegerSerde(_FixedIntSerde):
    """Kafka's IntegerSerializer: 4 bytes, big-endian, two's complement."""

    name = "int32"
    arrow_type = "int32"
    width = 4
    code = "i"


class LongSerde(_FixedIntSerde):
    """Kafka's LongSerializer: 8 bytes, big-endian, two's complement."""

    name = "int64"
    arrow_type = "int64"
    width = 8


_ARROW_INTS = {"i": pa.int32(), "q": pa.int64()}


class DoubleSerde(Serde[float]):
    """Kafka's DoubleSerializer: 8 bytes, IEEE 754, big-endian."""

    name = "float64"
    arrow_type = "double"

    def serialize(self, value: float | None) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise SerdeError(f"float64 serde: expected a number, got {type(value).__name__}")
        return struct.pack(">d", value)

    def deserialize(self, data: bytes | None) -> float | None:
        if data is None:
            return None
        if len(data) != 8:
            raise SerdeError(f"float64 serde: expected 8 bytes, got {len(data)}")
        value: float = struct.unpack(">d", data)[0]
        return value

    def to_arrow(self, data: list[bytes | None]) -> pa.Array[Any]:
        if _no_none(data) and all(len(d) == 8 for d in data):
            return pa.array(struct.unpack(f">{len(data)}d", b"".join(data)), pa.float64())
        return pa.array(self.deserialize_many(data), pa.float64())


class JsonSerde(Serde[Any]):
    """Compact JSON in UTF-8 with sorted keys; values become binary columns in output rows (their
    shape is open).

    orjson does the work: a JSON aggregate is read and written once per update, the hot path of a
    JSON-valued store, and orjson is about 5x faster than `json`. Where the two differ, `json` decides,
    so a value always reads back as itself: orjson writes NaN and infinities as null (`json` writes NaN,
    Infinity), refuses non-string keys, lone surrogates and integers beyond 64 bits, and reads such
    integers as floats. The two spell a few things differently (orjson: 0.00001 and "é"; `json`:
    1e-05 and "\\u00e9"); both read back the same."""

    name = "json"

    def serialize(self, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            data = orjson.dumps(value, option=_ORJSON_WRITE)
            if b"null" not in data:  # a null may have been a NaN or an infinity
                return data
        except TypeError:  # orjson.JSONEncodeError: `json` says whether, and why, it cannot either
            pass
        try:
            return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise SerdeError(f"json serde: {e}") from None

    def deserialize(self, data: bytes | None) -> Any:
        if data is None:
            return None
        if not _LONG_DIGITS.search(data):  # orjson would read an integer beyond 64 bits as a float
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError:
                pass  # `json` reads NaN, Infinity and lone surrogates, or says why the bytes are not JSON
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise SerdeError(f"json serde: {e}") from None

    def to_arrow(self, data: list[bytes | None]) -> pa.Array[Any]:
        """JSON objects as an Arrow struct column, read by Arrow's own JSON reader (C++, no Python
        object per record; it infers the fields and their types from the column); anything else
        (a null, an array, a scalar, a document it cannot type) through `deserialize` one by one."""
        if data and _no_none(data) and all(d[:1] == b"{" for d in data):
            try:
                table = pa_json.read_json(io.BytesIO(b"\n".join(data)))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass
            else:
                if table.num_rows == len(data) and table.num_columns:
                    return pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], table.column_names)
        return super().to_arrow(data)


_LONG_DIGITS = re.compile(rb"[0-9]{19}")
# Datetimes, dataclasses and subclasses of built-in types go to `json` too, which refuses the first
# two (as before orjson) and writes subclasses (an IntEnum) as their base type.
_ORJSON_WRITE = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
                 | orjson.OPT_PASSTHROUGH_SUBCLASS)


class TimestampedSerde(Serde[T]):
    """What a timestamped store keeps per entry, as Kafka's ValueAndTimestamp: the timestamp (8 bytes,
    big-endian, signed), then the inner serde's bytes; None (a delete) stays None. The DSL's
    aggregations and tables keep their results' timestamps this way, as Kafka's do: an update's
    output timestamp is the larger of the record's and the stored one's.

    `deserialize` gives the value alone (what readers such as interactive queries want);
    `deserialize_timestamped` gives (value, timestamp). A value written without a timestamp gets
    -1, Kafka's "unknown". Named as the inner serde: it reads and writes the same values."""

    def __init__(self, inner: Serde[T]) -> None:
        self.inner = inner
        self.name, self.arrow_type = inner.name, inner.arrow_type

    def serialize(self, value: T | None) -> bytes | None:
        return self.serialize_timestamped(value, -1)

    def serialize_timestamped(self, value: T | None, timestamp: int) -> bytes | None:
        data = self.inner.serialize(value)
        return None if data is None else timestamp.to_bytes(8, "big", signed=True) + data

    def deserialize(self, data: bytes | None) -> T | None:
        found = self.deserialize_timestamped(data)
        return None if found is None else found[0]

    def deserialize_timestamped(self, data: bytes | None) -> tuple[T | None, int] | None:
        if data is None:
            return None
        if len(data) < 8:
            raise SerdeError(f"timestamped {self.inner.name}: {len(data)} bytes cannot hold a timestamp")
        return self.inner.deserialize(data[8:]), int.from_bytes(data[:8], "big", signed=True)

    def __repr__(self) -> str:
        return f"TimestampedSerde({self.inner!r})"


def _no_none(data: list[bytes | None]) -> TypeGuard[list[bytes]]:
    return None not in data


class Serdes:
    """The built-in serdes, by Kafka's names where it has them."""

    @staticmethod
    def bytes() -> Serde[bytes]:
        return BytesSerde()

    @staticmethod
    def string() -> Serde[str]:
        return StringSerde()

    @staticmethod
    def int32() -> Serde[int]:
        return IntegerSerde()

    @staticmethod
    def int64() -> Serde[int]:
        return LongSerde()

    @staticmethod
    def float64() -> Serde[float]:
        """Kafka's Serdes.Double()."""
        return DoubleSerde()

    @staticmethod
    def json() -> Serde[Any]:
        return JsonSerde()
