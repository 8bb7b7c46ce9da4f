"""The workload every peer runs: records keyed by one of `keys` keys (`k000042`), each value an amount
0..999 as a decimal string, over 4 input partitions; each system keeps the per-key count and sum and
writes every update to an output topic as `count,sum`. The expected totals are known when the input is
made, so each system's output is checked against them (a fast wrong answer is worth nothing).

Output topics take the broker's clock (LogAppendTime), so every system's output is timed by the same
clock; the sustained throughput is read from there."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from tqdm import tqdm

PARTITIONS = 4
DRAIN_IDLE_S = 5.0  # OutputWatch.drain gives up after this long without a record
FIRST_OUTPUT_WINDOW_MS = 100  # the first burst of output: its records are not counted in the rate


def key_name(index: int) -> str:
    return f"k{index:06d}"


@dataclass
class Expected:
    """Per-key count and sum of what was produced."""

    counts: list[int]
    sums: list[int]

    @property
    def records(self) -> int:
        return sum(self.counts)


def create_topics(bootstrap: str, input_topic: str, outputs: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(input_topic, PARTITIONS, 1)]
    topics += [NewTopic(t, PARTITIONS, 1, config={"message.timestamp.type": "LogAppendTime"}) for t in outputs]
    for future in admin.create_topics(topics).values():
        future.result()


def bulk_producer(bootstrap: str) -> Producer:
    """A producer for loading input fast, partitioning by murmur2 as Java clients do."""
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                     "queue.buffering.max.messages": 1_000_000, "compression.type": "lz4",
                     "partitioner": "murmur2_random"})


def produce(bootstrap: str, topic: str, records: int, keys: int, seed: int = 7) -> Expected:
    """`records` records with uniformly drawn keys, partitioned by murmur2 as Java clients do (so any
    system, Python or JVM, finds a key in the partition it expects)."""
    rng = random.Random(seed)
    counts, sums = [0] * keys, [0] * keys
    names = [key_name(i).encode() for i in range(keys)]
    amounts = [str(a).encode() for a in range(1000)]
    producer = bulk_producer(bootstrap)
    with tqdm(total=records, desc="produce", unit="rec", unit_scale=True, leave=False) as bar:
        for i in range(records):
            k, a = rng.randrange(keys), rng.randrange(1000)
            counts[k] += 1
            sums[k] += a
            while True:
                try:
                    producer.produce(topic, amounts[a], names[k])
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 100_000 == 99_999:
                bar.update(100_000)
                producer.poll(0)
    producer.flush()
    return Expected(counts, sums)


@dataclass
class OutputWatch:
    """Reads one system's output topic: the latest `count,sum` per key, and the broker timestamps of
    the first and last output (with, per key, the count as of the first output burst)."""

    bootstrap: str
    topic: str
    latest: dict[str, tuple[int, int]] = field(default_factory=dict)
    first_ms: int | None = None
    last_ms: int = 0
    early_counts: dict[str, int] = field(default_factory=dict)
    malformed: int = 0
    outputs: int = 0
    on_output: Callable[[str, int, int], None] | None = None  # (key, count, broker time ms) of each output

    def __post_init__(self) -> None:
        self._consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"watch-{self.topic}",
                                   "enable.auto.commit": False, "fetch.max.bytes": 50_000_000})
        self._consumer.assign([KafkaTopicPartition(self.topic, p, 0) for p in range(PARTITIONS)])

    def end_offset(self) -> int:
        """Total records in the output topic (a cheap look, without reading them); -1 while the broker
        cannot tell yet (a topic just created: its leaders not yet known)."""
        try:
            return sum(self._consumer.get_watermark_offsets(KafkaTopicPartition(self.topic, p), timeout=10)[1]
                       for p in range(PARTITIONS))
        except KafkaException:
            return -1

    def drain(self) -> None:
        """Read up to the current end of every partition. Done by the consumer's position, not by the
        last record's offset: a transactional writer (exactly_once_v2) ends a partition with a commit
        marker no consumer is handed. Gives up after DRAIN_IDLE_S without a record: a transaction
        still open (a killed writer's, until the broker aborts it) holds the rest back, and the
        caller asks again."""
        every = [KafkaTopicPartition(self.topic, p) for p in range(PARTITIONS)]
        ends = {tp.partition: self._consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in every}
        idle_since = time.monotonic()
        while any(max(tp.offset, 0) < ends[tp.partition] for tp in self._consumer.position(every)):
            batch = self._consumer.consume(100_000, 1.0)
            for m in batch:
                if m.error() is None and m.partition() is not None and m.offset() is not None:
                    self._take(m.key(), m.value(), m.timestamp()[1])
            if batch:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > DRAIN_IDLE_S:
                return

    def _take(self, key: bytes | None, value: bytes | None, ts: int) -> None:
        self.outputs += 1
        try:
            name = (key or b"").decode()
            count_text, sum_text = (value or b"").decode().split(",")
            agg = int(count_text), int(sum_text)
        except ValueError:
            self.malformed += 1
            return
        if self.first_ms is None or ts < self.first_ms:
            self.first_ms = ts
        self.last_ms = max(self.last_ms, ts)
        if ts <= self.first_ms + FIRST_OUTPUT_WINDOW_MS:
            self.early_counts[name] = max(self.early_counts.get(name, 0), agg[0])
        self.latest[name] = agg
        if self.on_output is not None:
            self.on_output(name, agg[0], ts)

    def mismatches(self, expected: Expected) -> int:
        """Keys whose latest output differs from the expected count and sum (missing keys included)."""
        wrong = 0
        for i, (count, total) in enumerate(zip(expected.counts, expected.sums, strict=True)):
            if count and self.latest.get(key_name(i)) != (count, total):
                wrong += 1
        return wrong + sum(1 for k in self.latest if not k.startswith("k")) + self.malformed

    def rate(self, expected: Expected) -> float:
        """Records/s from the end of the first output burst to the last output: the records whose
        effect was visible in that first burst are left out, as is the time before it."""
        if self.first_ms is None:
            return 0.0
        start_ms = self.first_ms + FIRST_OUTPUT_WINDOW_MS
        seconds = (self.last_ms - start_ms) / 1000
        counted = expected.records - sum(self.early_counts.values())
        return counted / seconds if seconds > 0 else float("nan")

    def close(self) -> None:
        self._consumer.close()


def wait_for_output(watch: OutputWatch, expected: Expected, timeout_s: float, running: Callable[[], bool],
                    quiet_s: float = 2.0) -> bool:
    """Wait until the output is right for every key, reading it only when it has been quiet for
    `quiet_s` (reading while the system runs would take CPU from it). False on timeout, or when the
    system is no longer `running`."""
    deadline = time.monotonic() + timeout_s
    seen = -1
    while time.monotonic() < deadline and running():
        time.sleep(quiet_s)
        now = watch.end_offset()
        if now == seen and now > 0:
            watch.drain()
            if watch.mismatches(expected) == 0:
                return True
        seen = now
    watch.drain()
    return False
