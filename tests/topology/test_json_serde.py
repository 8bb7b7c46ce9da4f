"""The JSON serde against Python's `json`, its reference: orjson writes and reads the common cases,
and every value, however odd, reads back as `json` would read it back."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams_rt.topology.serdes import JsonSerde, SerdeError

SERDE = JsonSerde()

scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text()
           | st.integers(min_value=2**62, max_value=2**70) | st.sampled_from(["null", "NaN", "\ud800", "é"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4), max_leaves=20)


def same(a: Any, b: Any) -> bool:
    """Equality that counts NaN equal to NaN and tells 1 from 1.0 and True from 1."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def has_float(value: Any) -> bool:
    if isinstance(value, list):
        return any(has_float(v) for v in value)
    if isinstance(value, dict):
        return any(has_float(v) for v in value.values())
    return isinstance(value, float)


@given(values.filter(lambda v: v is not None))  # None is a tombstone, not a JSON null
def test_a_value_reads_back_as_json_reads_it_back(value: Any) -> None:
    try:
        reference = json.loads(json.dumps(value, separators=(",", ":"), sort_keys=True))
    except TypeError:  # keys of mixed types cannot be sorted
        with pytest.raises(SerdeError, match="json serde"):
            SERDE.serialize(value)
        return
    data = SERDE.serialize(value)
    assert data is not None
    assert same(SERDE.deserialize(data), reference)
    assert same(json.loads(data), reference)  # any JSON reader reads what was written
    if not has_float(value):  # the bytes are json's, with or without escapes of non-ASCII text
        spelled = {json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=escaped)
                   for escaped in (True, False)}
        assert data.decode("utf-8", "surrogatepass") in spelled


@given(st.binary(max_size=30) | values.map(lambda v: json.dumps(v).encode()))
def test_bytes_read_as_json_reads_them_or_fail_with_a_serde_error(data: bytes) -> None:
    try:
        expected = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        with pytest.raises(SerdeError, match="json serde"):
            SERDE.deserialize(data)
        return
    assert same(SERDE.deserialize(data), expected)


def test_integers_beyond_64_bits_stay_integers() -> None:
    for n in (2**64, -(2**63) - 1, 10**30):
        assert SERDE.deserialize(SERDE.serialize([n])) == [n]
        assert isinstance(SERDE.deserialize(str(n).encode()), int)


def test_nan_and_infinity_are_written_as_json_writes_them_not_as_null() -> None:
    assert SERDE.serialize([math.inf, -math.inf]) == b"[Infinity,-Infinity]"
    assert math.isnan(SERDE.deserialize(SERDE.serialize(math.nan)))


class Color(enum.IntEnum):
    RED = 1


@dataclasses.dataclass
class Point:
    x: int


def test_what_json_refuses_is_refused_and_subclasses_are_written_as_their_base() -> None:
    assert SERDE.serialize({"c": Color.RED}) == b'{"c":1}'
    for refused in ({1, 2}, datetime.datetime(2026, 1, 1), Point(1), b"bytes"):
        with pytest.raises(SerdeError, match="not JSON serializable"):
            SERDE.serialize(refused)
