"""Java string encodings and String.hashCode, checked against values Java defines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams_rt.protocol.strings import decode_mutf8, encode_mutf8, java_string_hash


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("abc", b"abc"),
        ("\0", b"\xc0\x80"),
        ("é", b"\xc3\xa9"),
        ("€", b"\xe2\x82\xac"),
        ("\U0001f600", b"\xed\xa0\xbd\xed\xb8\x80"),  # a surrogate pair, three bytes each
        ("\ud800", b"\xed\xa0\x80"),  # a lone surrogate is encodable in Java
    ],
)
def test_modified_utf8_matches_java_write_utf(text: str, encoded: bytes) -> None:
    assert encode_mutf8(text) == encoded
    assert decode_mutf8(encoded) == text


@given(st.text(st.characters(exclude_categories=())))
def test_modified_utf8_round_trip(text: str) -> None:
    assert decode_mutf8(encode_mutf8(text)) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 97), ("hello", 99162322), ("Aa", 2112), ("BB", 2112), ("polygenelubricants", -(2**31))],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected & 0xFFFFFFFF
