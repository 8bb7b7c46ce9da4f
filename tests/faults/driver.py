"""The workload driver, after Kafka's SmokeTestDriver: it produces a known set of records to the
smoke application's input topic and remembers every one, so the verifier can recompute all the
application's results from what was produced rather than from what the application says.

Two shapes: `smoke` (a few keys, many values each, every key's values in a shuffled order) and
`random` (many keys, a few values each). Values are positive, so under at_least_once a replayed
record can only raise a sum or a count: a result below the reference means a lost record.
Timestamps start now and rise with every record, so no window ever sees a late record.

The producer is idempotent with acks=all: a broker bounce while producing neither loses nor
duplicates input, so every difference the verifier finds is the application's.

    python -m tests.faults.driver --bootstrap 127.0.0.1:9092 --topic smoke-data --keys 20 --values 1000
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, Message, Producer

from streams_rt.topology import Serdes

I64 = Serdes.int64()
TIMESTAMP_STEP_MS = 7  # about 1,400 records per 10-second window


def base_timestamp_ms() -> int:
    """Now, to the second: records stamped far in the past would be deleted by the broker's
    time-based retention (7 days by default) as soon as their segment rolls, input and output alike."""
    return int(time.time()) * 1000


@dataclass(frozen=True)
class Produced:
    key: str
    value: int
    timestamp: int


def smoke_workload(keys: int, values_per_key: int, seed: int = 0) -> list[tuple[str, int]]:
    """Every key gets the values 1..values_per_key once; the keys' records interleave at random."""
    rng = random.Random(seed)
    records = [(f"key-{k}", v) for k in range(keys) for v in range(1, values_per_key + 1)]
    rng.shuffle(records)
    return records


def random_workload(keys: int, records: int, seed: int = 0) -> list[tuple[str, int]]:
    """`records` records over `keys` random keys, values in 1..1000."""
    rng = random.Random(seed)
    return [(f"key-{rng.randrange(keys)}", rng.randint(1, 1000)) for _ in range(records)]


@dataclass
class Driver:
    """Produces `records` to `topic` in the background, spread over `duration_s`; `produced` holds
    every record the broker acknowledged, in the order they were sent."""

    bootstrap: str
    topic: str
    records: list[tuple[str, int]]
    duration_s: float = 0.0
    produced: list[Produced] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    base_timestamp: int = field(default_factory=base_timestamp_ms)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fault-driver", daemon=True)
        self._done = threading.Event()

    def start(self) -> Driver:
        self._thread.start()
        return self

    def wait(self, timeout_s: float = 300.0) -> list[Produced]:
        """Until every record is acknowledged; raises if any was not."""
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise TimeoutError(f"the driver produced {len(self.produced)} of {len(self.records)} within {timeout_s} s")
        if self.errors or len(self.produced) != len(self.records):
            raise RuntimeError(f"the driver could not produce every record: {self.errors[:5]}")
        return self.produced

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "partitioner": "murmur2_random",
                             "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                             "message.timeout.ms": 300_000})
        sent: dict[int, Produced] = {}
        acknowledged: set[int] = set()

        def delivered(number: int) -> Callable[[KafkaError | None, Message], None]:
            def report(error: KafkaError | None, _message: Message) -> None:
                if error is None:
                    acknowledged.add(number)
                else:
                    self.errors.append(str(error))
            return report

        began = time.monotonic()
        pace = self.duration_s / max(1, len(self.records))
        try:
            for number, (key, value) in enumerate(self.records):
                record = Produced(key, value, self.base_timestamp + number * TIMESTAMP_STEP_MS)
                sent[number] = record
                while True:
                    try:
                        producer.produce(self.topic, I64.serialize(value), key.encode(), timestamp=record.timestamp,
                                         on_delivery=delivered(number))
                        break
                    except BufferError:
                        producer.poll(0.1)
                producer.poll(0)
                ahead = began + number * pace - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            remaining = producer.flush(300)
            if remaining:
                self.errors.append(f"{remaining} records not delivered within 300 s")
        finally:
            # In the order sent: the idempotent producer keeps each partition's order.
            self.produced.extend(sent[n] for n in sorted(acknowledged))
            self._done.set()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--values", type=int, default=1000, help="values per key (smoke) or records (random)")
    parser.add_argument("--mode", choices=["smoke", "random"], default="smoke")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds to spread the records over")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    records = (smoke_workload(args.keys, args.values, args.seed) if args.mode == "smoke"
               else random_workload(args.keys, args.values, args.seed))
    produced = Driver(args.bootstrap, args.topic, records, args.duration).start().wait(args.duration + 300)
    print(json.dumps({"topic": args.topic, "produced": len(produced),
                      "keys": len({p.key for p in produced})}))


if __name__ == "__main__":
    main()
