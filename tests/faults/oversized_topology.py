"""A topology that writes records as big as its input asks: each input value is a size, and the
record written is that many bytes, to an output topic (`where="output"`) or into a store and so its
changelog (`where="changelog"`). The fault suite's oversized-record test feeds it one record bigger
than Kafka accepts."""

from __future__ import annotations

import random

from streams_rt.topology import Serdes, StreamsBuilder, Topology

S, I64, B = Serdes.string(), Serdes.int64(), Serdes.bytes()
INPUT, OUTPUT, STORE = "big-in", "big-out", "latest"


def payload(size: int) -> bytes:
    """`size` bytes that do not compress (the producer compresses, and the broker's limit is on the
    compressed batch), the same for the same size."""
    return random.Random(size).randbytes(size)


def oversized(suffix: str = "", where: str = "output") -> Topology:
    b = StreamsBuilder()
    payloads = b.stream(f"{INPUT}{suffix}", S, I64).map_values(payload, B)
    if where == "output":
        payloads.to(f"{OUTPUT}{suffix}", S, B)
    else:
        payloads.group_by_key().reduce(lambda _old, new: new, STORE)
    return b.build()
