"""End-to-end latency at a fixed input rate: records are produced at `rate` records/s while the system
runs; a record's latency is the time from its produce call to the first output that includes it (the
first output of its key whose count reaches the record's position among that key's records), on the
same machine's clock (the output topics take the broker's LogAppendTime). Systems that emit one
update per key per batch or commit are timed for every record the update covers, not only the last."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Producer

from bench.peers.workload import Expected, key_name

WARM_UP_S = 10.0  # records produced in the first seconds are not timed: the system catches up its start


@dataclass
class Feed:
    """What the paced producer sent: per key, the produce time (ms) of each of its records in order."""

    keys: int
    produced_ms: dict[str, list[float]] = field(default_factory=dict)
    sums: dict[str, int] = field(default_factory=dict)
    timed_from_ms: float = 0.0
    timed_to_ms: float = 0.0

    def expected(self) -> Expected:
        names = [key_name(i) for i in range(self.keys)]
        return Expected([len(self.produced_ms.get(n, ())) for n in names], [self.sums.get(n, 0) for n in names])


def feed(bootstrap: str, topic: str, feed_state: Feed, rate: float, seconds: float, ready: Callable[[], bool],
         ready_timeout_s: float = 300.0, seed: int = 11) -> bool:
    """A trickle (4 records/s) until the system is `ready` (its first output), then `rate` records/s
    for WARM_UP_S + `seconds`; the records after the warm-up are timed. False if never ready."""
    rng = random.Random(seed)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "partitioner": "murmur2_random"})

    def send() -> None:
        name, amount = key_name(rng.randrange(feed_state.keys)), rng.randrange(1000)
        producer.produce(topic, str(amount).encode(), name.encode())
        feed_state.produced_ms.setdefault(name, []).append(time.time() * 1000)
        feed_state.sums[name] = feed_state.sums.get(name, 0) + amount

    deadline = time.monotonic() + ready_timeout_s
    while not ready():
        if time.monotonic() > deadline:
            return False
        send()
        producer.flush()
        time.sleep(0.25)
    began, sent = time.monotonic(), 0
    feed_state.timed_from_ms = time.time() * 1000 + WARM_UP_S * 1000
    end = began + WARM_UP_S + seconds
    while (now := time.monotonic()) < end:
        due = int((now - began) * rate)
        while sent < due:
            send()
            sent += 1
        producer.poll(0)
        time.sleep(0.002)
    feed_state.timed_to_ms = time.time() * 1000
    producer.flush()
    return True


class LatencyTracker:
    """Fed each output (key, count, broker time) in partition order; collects the latency of every
    timed record the output makes visible for the first time."""

    def __init__(self, feed_state: Feed) -> None:
        self.feed = feed_state
        self.seen: dict[str, int] = {}
        self.samples: list[float] = []

    def __call__(self, key: str, count: int, ts_ms: int) -> None:
        produced = self.feed.produced_ms.get(key, [])
        first = self.seen.get(key, 0)
        for t in produced[first:count]:
            if self.feed.timed_from_ms <= t <= self.feed.timed_to_ms:
                self.samples.append(ts_ms - t)
        self.seen[key] = max(first, count)

    def timed(self) -> int:
        """How many records were produced in the timed window (each should have one sample)."""
        return sum(1 for times in self.feed.produced_ms.values() for t in times
                   if self.feed.timed_from_ms <= t <= self.feed.timed_to_ms)

