"""Bad bytes: each kind raises MalformedUserData naming the version and the byte offset."""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable

import pytest

from streams_rt.protocol import MalformedUserData, decode_assignment, decode_subscription
from tests.protocol.samples import VERSIONS, Decoder, UserData, assignment, subscription

DECODERS: dict[str, tuple[Decoder, Callable[[int], UserData]]] = {
    "subscription": (decode_subscription, subscription), "assignment": (decode_assignment, assignment),
}


def _raises(decode: Decoder, data: bytes) -> MalformedUserData:
    with pytest.raises(MalformedUserData) as info:
        decode(data)
    return info.value


@pytest.mark.parametrize("kind", DECODERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_is_reported_within_the_data(kind: str, version: int) -> None:
    decode, sample = DECODERS[kind]
    data = sample(version).encode()
    assert decode(data) == sample(version)
    for cut in range(len(data)):
        err = _raises(decode, data[:cut])
        assert err.kind == kind
        assert 0 <= err.offset <= cut
        assert err.version == (version if cut >= 4 else None)
        assert f"at byte {err.offset}" in str(err)


@pytest.mark.parametrize("kind", DECODERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_trailing_garbage(kind: str, version: int) -> None:
    decode, sample = DECODERS[kind]
    data = sample(version).encode()
    err = _raises(decode, data + b"\x00")
    assert (err.version, err.offset) == (version, len(data))
    assert "trailing" in err.reason


@pytest.mark.parametrize("kind", DECODERS)
@pytest.mark.parametrize("version", [0, -1, -(2**31)])
def test_versions_below_one(kind: str, version: int) -> None:
    decode, _ = DECODERS[kind]
    err = _raises(decode, struct.pack(">i", version) + bytes(40))
    assert err.offset == 0 and f"unknown version {version}" in err.reason


def test_assignment_above_latest_version_is_unknown() -> None:
    err = _raises(decode_assignment, struct.pack(">ii", 12, 12) + bytes(20))
    assert (err.version, err.offset) == (None, 0)
    assert "unknown version 12" in err.reason


def test_future_subscription_must_support_its_own_version() -> None:
    err = _raises(decode_subscription, struct.pack(">ii", 12, 11))
    assert (err.version, err.offset) == (12, 4)


def test_subscription_latest_supported_below_used_version() -> None:
    data = bytearray(subscription(5).encode())
    data[4:8] = struct.pack(">i", 4)
    err = _raises(decode_subscription, bytes(data))
    assert (err.version, err.offset) == (5, 4)


def _huge_count_cases() -> list[tuple[str, bytes, int]]:
    """A count field set negative or huge: (kind, bytes, offset of the count)."""
    cases = []
    head = struct.pack(">ii", 11, 11) + bytes(16)  # version, latest, process id
    endpoint = struct.pack(">i", 0)
    for count in (-1, 2**31 - 1, 10**9):
        cases.append(("subscription", head + endpoint + struct.pack(">i", count), len(head) + 4))
        cases.append(("subscription", struct.pack(">ii", 3, 3) + bytes(16) + struct.pack(">i", count), 24))
        cases.append(("assignment", struct.pack(">iii", 11, 11, count), 8))
        cases.append(("assignment", struct.pack(">iiii", 4, 4, 0, count), 12))
        cases.append(("assignment", struct.pack(">iiiii", 6, 6, 0, 0, count), 16))
    return cases


@pytest.mark.parametrize(("kind", "data", "offset"), _huge_count_cases())
def test_negative_or_huge_counts_fail_before_allocating(kind: str, data: bytes, offset: int) -> None:
    decode, _ = DECODERS[kind]
    tracemalloc.start()
    try:
        err = _raises(decode, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.offset == offset
    assert "count" in err.reason
    assert peak < 1_000_000  # refused before allocating anything sized by the count


@pytest.mark.parametrize("length", [-1, -5, 2**31 - 1])
def test_negative_or_huge_byte_lengths(length: int) -> None:
    data = struct.pack(">ii", 2, 0)[:4] + bytes(16) + struct.pack(">i", 0) * 2 + struct.pack(">i", length)
    err = _raises(decode_subscription, data)
    assert err.version == 2 and err.offset == 4 + 16 + 8


def test_invalid_utf8_in_endpoint() -> None:
    data = bytearray(subscription(11).encode())
    at = data.index(b"host-")
    data[at] = 0xFF
    err = _raises(decode_subscription, bytes(data))
    assert (err.version, err.offset) == (11, at) and "UTF-8" in err.reason


@pytest.mark.parametrize("bad", [b"\xff", b"\x80", b"\xf0\x9f\x98\x80", b"\x00", b"\xc1\x81", b"\xe0\x80\x80"])
def test_invalid_modified_utf8_in_host(bad: bytes) -> None:
    data = struct.pack(">iiii", 4, 4, 0, 0) + struct.pack(">i", 1) + struct.pack(">H", len(bad)) + bad
    data += struct.pack(">iii", 80, 0, 0)
    err = _raises(decode_assignment, data)
    assert err.version == 4 and err.offset == 22 and "UTF-8" in err.reason


@pytest.mark.parametrize("kind", DECODERS)
@pytest.mark.parametrize("code", [5, -1, 2**31 - 1])
def test_unknown_error_codes(kind: str, code: int) -> None:
    decode, sample = DECODERS[kind]
    data = sample(11).encode()
    at = len(data) - (8 + 4 if kind == "assignment" else 4 + 4 + 2 * (4 + 4) + len(b"zoneeu-1rackr2"))
    patched = data[:at] + struct.pack(">i", code) + data[at + 4 :]
    err = _raises(decode, patched)
    assert (err.version, err.offset) == (11, at) and f"unknown error code {code}" in err.reason


def test_unknown_topic_index() -> None:
    data = struct.pack(">iii", 5, 5, 0) + struct.pack(">i", 0)  # no active, no standby
    data += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">H", 1) + b"t"  # dictionary {0: "t"}
    data += struct.pack(">i", 1) + struct.pack(">H", 1) + b"h" + struct.pack(">ii", 1, 1) + struct.pack(">ii", 7, 0)
    data += struct.pack(">i", 0)
    err = _raises(decode_assignment, data)
    assert (err.kind, err.version, err.offset) == ("assignment", 5, 42) and "topic index 7" in err.reason


def test_duplicates_in_sets_are_refused() -> None:
    data = struct.pack(">i", 1) + bytes(16) + struct.pack(">i", 2) + struct.pack(">ii", 1, 1) * 2 + struct.pack(">i", 0)
    err = _raises(decode_subscription, data)
    assert err.version == 1 and err.offset == 4 + 16 + 4 + 8 and "twice" in err.reason


def test_duplicate_named_partition_in_an_assignment() -> None:
    # v1: no active tasks, one standby task whose partition set names "é"-0 twice ("é" is 2 bytes in MUTF-8).
    entry = struct.pack(">H", 2) + "é".encode() + struct.pack(">i", 0)
    data = struct.pack(">iii", 1, 0, 1) + struct.pack(">ii", 1, 1) + struct.pack(">i", 2) + entry * 2
    err = _raises(decode_assignment, data)
    assert (err.kind, err.version, err.offset) == ("assignment", 1, 24 + len(entry))
    assert "partition é-0 appears twice" in err.reason


def test_duplicate_indexed_partition_in_an_assignment() -> None:
    data = struct.pack(">iiii", 5, 5, 0, 0)  # no active, no standby
    data += struct.pack(">ii", 1, 0) + struct.pack(">H", 1) + b"t"  # dictionary {0: "t"}
    data += struct.pack(">i", 1) + struct.pack(">H", 1) + b"h" + struct.pack(">ii", 1, 2) + struct.pack(">ii", 0, 3) * 2
    data += struct.pack(">i", 0)
    err = _raises(decode_assignment, data)
    assert (err.kind, err.version, err.offset) == ("assignment", 5, 50) and "partition t-3 appears twice" in err.reason


@pytest.mark.parametrize(
    ("version", "task"), [(2, struct.pack(">ii", 1, 1)), (10, struct.pack(">iii", 1, 1, 1) + b"\0n")]
)
def test_standby_task_twice_in_an_assignment(version: int, task: bytes) -> None:
    head = struct.pack(">i", version) + (struct.pack(">i", version) if version >= 3 else b"")
    data = head + struct.pack(">ii", 0, 2) + (task + struct.pack(">i", 0)) * 2 + bytes(64)
    err = _raises(decode_assignment, data)
    assert (err.kind, err.version, err.offset) == ("assignment", version, len(head) + 8 + len(task) + 4)
    assert "appears twice" in err.reason


def test_duplicate_client_tag() -> None:
    data = subscription(11).encode()
    assert data.count(b"rack") == 1 and data.count(b"zone") == 1
    data = data.replace(b"rack", b"zone")  # {"zone": "eu-1", "zone": "r2"}
    at = data.rindex(b"zone") - 4
    err = _raises(decode_subscription, data)
    assert (err.kind, err.version, err.offset) == ("subscription", 11, at)
    assert "duplicate client tag 'zone'" in err.reason
