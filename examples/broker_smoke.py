"""`make demo` (until the Spark job lands): start the embedded Kafka broker, then produce and
consume 1,000,000 records with confluent-kafka and print both rates."""

from __future__ import annotations

import argparse
import logging
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from tqdm import tqdm

from streams_rt.kafka.dev_broker import DevBroker

KEY_BYTES, VALUE_BYTES = 16, 100


def produce(bootstrap: str, topic: str, count: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 500_000})
    value = b"v" * VALUE_BYTES
    began = time.perf_counter()
    with tqdm(total=count, desc="produce", unit="rec", unit_scale=True) as progress:
        for i in range(count):
            while True:
                try:
                    producer.produce(topic, key=i.to_bytes(KEY_BYTES, "big"), value=value, partition=i % 4)
                    break
                except BufferError:  # local queue full: let librdkafka send, then retry this record
                    producer.poll(0.05)
            if i % 10_000 == 9_999:
                producer.poll(0)
                progress.update(10_000)
        undelivered = producer.flush(60)
        progress.update(count - progress.n)
    if undelivered:
        raise KafkaException(f"{undelivered} records were not delivered")
    return time.perf_counter() - began


def consume(bootstrap: str, topic: str, count: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"smoke-{uuid.uuid4()}",
                         "enable.auto.commit": False, "fetch.max.bytes": 52_428_800})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(4)])
    seen = 0
    began = time.perf_counter()
    with tqdm(total=count, desc="consume", unit="rec", unit_scale=True) as progress:
        while seen < count:
            batch = consumer.consume(num_messages=10_000, timeout=5.0)
            if not batch:
                raise TimeoutError(f"no records for 5 s after {seen:,} of {count:,}")
            for message in batch:
                if message.error():
                    raise KafkaException(message.error())
            seen += len(batch)
            progress.update(len(batch))
    elapsed = time.perf_counter() - began
    consumer.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    broker = DevBroker()
    info = broker.start(owned=True)
    print(f"Kafka broker at {info.bootstrap_servers}"
          + (" (already running)" if info.reused else f", started in {info.startup_seconds:.1f} s"))
    topic = f"smoke-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": info.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(timeout=30)
    try:
        megabytes = args.records * (KEY_BYTES + VALUE_BYTES) / 1e6
        produce_s = produce(info.bootstrap_servers, topic, args.records)
        consume_s = consume(info.bootstrap_servers, topic, args.records)
        print(f"produced {args.records:,} records ({megabytes:.0f} MB) in {produce_s:.2f} s: "
              f"{args.records / produce_s:,.0f} records/s, {megabytes / produce_s:.1f} MB/s")
        print(f"consumed {args.records:,} records ({megabytes:.0f} MB) in {consume_s:.2f} s: "
              f"{args.records / consume_s:,.0f} records/s, {megabytes / consume_s:.1f} MB/s")
    finally:
        admin.delete_topics([topic])[topic].result(timeout=30)
        del admin  # close its connections before the broker goes away
        if not info.reused:  # a broker someone else started stays up
            broker.stop()


if __name__ == "__main__":
    main()
