"""Fuzzing both decoders: random bytes and mutations of valid encodings of every version.

Every input must either decode to a value that is valid and re-encodes to an equal value, or raise
MalformedUserData; any other exception (IndexError, struct.error, MemoryError, UnicodeError...) fails."""

from __future__ import annotations

import dataclasses
import random
import struct
from collections import Counter
from collections.abc import Callable

import pytest

from streams_rt.protocol import FutureSubscriptionInfo, MalformedUserData, decode_assignment, decode_subscription
from tests.protocol.samples import VERSIONS, Decoder, UserData, assignment, subscription

RANDOM_INPUTS = 10_000
MUTATIONS = 10_000
INTERESTING_INTS = [0, 1, -1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 2**31 - 1, -(2**31), 10**6]
DECODERS: dict[str, Decoder] = {"subscription": decode_subscription, "assignment": decode_assignment}
SAMPLES: dict[str, Callable[[int], UserData]] = {"subscription": subscription, "assignment": assignment}


def _random_input(rng: random.Random) -> bytes:
    body = rng.randbytes(rng.randrange(0, 120))
    if rng.random() < 0.7:  # mostly a plausible version, so that decoding gets past the first field
        return struct.pack(">i", rng.randrange(-1, 14)) + body
    return body


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(0, len(buf) + 1)
        op = rng.randrange(6)
        if op == 0 and buf:  # flip one bit
            at = min(at, len(buf) - 1)
            buf[at] ^= 1 << rng.randrange(8)
        elif op == 1:  # overwrite a 4-byte window with an edge value
            value = rng.choice(INTERESTING_INTS) if rng.random() < 0.9 else -rng.randrange(2**31)
            buf[at : at + 4] = struct.pack(">i", value)
        elif op == 2:  # truncate
            del buf[at:]
        elif op == 3:  # insert random bytes
            buf[at:at] = rng.randbytes(rng.randrange(1, 9))
        elif op == 4:  # delete a slice
            del buf[at : at + rng.randrange(1, 9)]
        else:  # duplicate a slice
            buf[at:at] = buf[at : at + rng.randrange(1, 24)]
    return bytes(buf)


def _check(kind: str, data: bytes, outcomes: Counter[str]) -> None:
    try:
        value = DECODERS[kind](data)
    except MalformedUserData as err:
        assert err.kind == kind and 0 <= err.offset <= len(data), err
        outcomes["malformed"] += 1
        outcomes["past the header"] += err.offset >= 8
        return
    outcomes["decoded"] += 1
    if isinstance(value, FutureSubscriptionInfo):
        return
    assert dataclasses.replace(value) == value  # re-validates: a decoded value is a valid value
    assert DECODERS[kind](value.encode()) == value


@pytest.mark.parametrize("kind", DECODERS)
def test_random_bytes(kind: str) -> None:
    rng = random.Random(f"random-{kind}")
    outcomes: Counter[str] = Counter()
    for _ in range(RANDOM_INPUTS):
        _check(kind, _random_input(rng), outcomes)
    # Random bytes must also exercise the field decoders, not only the version check.
    assert outcomes["past the header"] > RANDOM_INPUTS // 20


@pytest.mark.parametrize("kind", DECODERS)
def test_mutations_of_valid_encodings(kind: str) -> None:
    rng = random.Random(f"mutate-{kind}")
    seeds = [SAMPLES[kind](v).encode() for v in VERSIONS]
    outcomes: Counter[str] = Counter()
    for _ in range(MUTATIONS):
        _check(kind, _mutate(rng, rng.choice(seeds)), outcomes)
    # Mutations must reach past the header: some still decode (e.g. a changed offset sum), most do not.
    assert outcomes["decoded"] > MUTATIONS // 100
    assert outcomes["malformed"] > MUTATIONS // 2
