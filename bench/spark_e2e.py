"""End-to-end benchmark: word count over N records (default 5M; one word per record, 10k distinct, 2
partitions) through the whole path in Spark local[2] (StreamsRuntime, the data source, task hosts),
against the hosts alone driven by the batch loop (bench/processing.py's figure), measured in the same
run on the same data. Then latency: records produced at half the sustained rate for a while, and the
p50/p99 of (output row arrives in the sink) - (its record's produce timestamp).

    python bench/spark_e2e.py [--records 5000000] [--bootstrap HOST:PORT] [--latency-seconds 30]

The last line reads `ratio <spark / hosts alone> target 0.70`."""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import random
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.processing import PARTITIONS, bench_workspace, produce  # noqa: E402
from bench.processing import run as run_hosts_alone  # noqa: E402
from streams_rt import StreamsRuntime  # noqa: E402
from streams_rt.kafka.offsets import end_offsets  # noqa: E402
from streams_rt.protocol import TaskId  # noqa: E402
from streams_rt.rpc.tasks import TaskStatus  # noqa: E402
from streams_rt.spark.session import build_session  # noqa: E402

BATCH = 200_000


def run_spark(spark: SparkSession, bootstrap: str, topic: str, out: str, count: int, work: Path) -> dict[str, Any]:
    props: dict[str, Any] = {"application.id": f"bench-e2e-{uuid.uuid4().hex[:6]}", "bootstrap.servers": bootstrap,
             "max.records.per.task.per.batch": BATCH, "heartbeat.interval.ms": 500, "session.timeout.ms": 10_000}
    runtime = StreamsRuntime(spark, "examples.word_count:topology", props,
                             topology_args={"lines": topic, "counts": out}, work_dir=work / props["application.id"])
    rows = [0]
    query = (runtime.stream().writeStream.foreachBatch(lambda df, _: rows.__setitem__(0, rows[0] + df.count()))
             .trigger(processingTime="0 seconds").start())
    loop = runtime.app.loop()  # only to ask the coordinator: Spark runs the batches
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        while True:
            _, statuses = loop.status()
            done = sum(v for t, s in statuses.items() if t.subtopology == 0 for v in s.positions.values())
            if done >= count and remaining(admin, statuses) == 0:
                break
            time.sleep(0.2)
        query.processAllAvailable()  # the hosts are done: let Spark finish the micro-batch that took their rows
        ended = time.time()
        # From the start of the first micro-batch with input (Spark's progress; lastProgress may lag a short run).
        first = next(p for p in query.recentProgress if p["numInputRows"] > 0)
        seconds = ended - datetime.datetime.fromisoformat(first["timestamp"].replace("Z", "+00:00")).timestamp()
        return {"seconds": seconds, "rate": count / seconds, "rows": rows[0]}
    finally:
        query.stop()
        loop.close()
        runtime.stop()


def remaining(admin: AdminClient, statuses: dict[TaskId, TaskStatus]) -> int:
    """Offsets between the tasks' committed positions (as their hosts report them) and the input
    partitions' high watermarks (repartition topics included)."""
    tps = [tp for s in statuses.values() for tp in s.inputs]
    ends = end_offsets(admin, tps, read_committed=False)
    return sum(max(0, ends[tp] - s.positions.get(tp, 0)) for s in statuses.values() for tp in s.inputs)


def latency(spark: SparkSession, bootstrap: str, rate: float, seconds: float, work: Path) -> list[float]:
    """Produce at `rate` records/s for `seconds`; latency of each output row, in ms."""
    suffix = uuid.uuid4().hex[:6]
    topic, out = f"lat-words-{suffix}", f"lat-counts-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1), NewTopic(out, PARTITIONS, 1)]).values():
        future.result()
    props: dict[str, Any] = {"application.id": f"bench-lat-{suffix}", "bootstrap.servers": bootstrap,
             "heartbeat.interval.ms": 500, "session.timeout.ms": 10_000}
    runtime = StreamsRuntime(spark, "examples.word_count:topology", props,
                             topology_args={"lines": topic, "counts": out}, work_dir=work / props["application.id"])
    samples: list[float] = []
    measuring = threading.Event()

    def record(df: DataFrame, _batch: int) -> None:
        timestamps = [r.timestamp.timestamp() for r in df.select("timestamp").collect()]
        now = time.time()
        if measuring.is_set():
            samples.extend((now - ts) * 1000 for ts in timestamps)

    query = runtime.stream().writeStream.foreachBatch(record).trigger(processingTime="0 seconds").start()
    stop = threading.Event()

    def feed() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        rng = random.Random(3)
        began, sent = time.monotonic(), 0
        while not stop.is_set():
            producer.produce(topic, f"word{rng.randrange(10_000):05d}".encode(), partition=sent % PARTITIONS)
            sent += 1
            ahead = sent / rate - (time.monotonic() - began)
            if ahead > 0:
                producer.poll(0)
                stop.wait(ahead)
        producer.flush()

    feeder = threading.Thread(target=feed, daemon=True)
    try:
        feeder.start()
        time.sleep(10)  # warm up: hosts running, first batches done
        measuring.set()
        time.sleep(seconds)
        measuring.clear()
    finally:
        stop.set()
        feeder.join()
        query.stop()
        runtime.stop()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--bootstrap", help="an existing broker; default: start a dev broker")
    parser.add_argument("--latency-seconds", type=float, default=30.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with bench_workspace("bench-e2e-", args.bootstrap) as (work, bootstrap, _):
        suffix = uuid.uuid4().hex[:6]
        topic = f"e2e-words-{suffix}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        outs = [f"e2e-counts-{suffix}-{i}" for i in range(2)]
        for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in [topic, *outs]]).values():
            future.result()
        produce(bootstrap, topic, args.records)
        spark = build_session("local[2]", "bench-e2e")
        spark.sparkContext.setLogLevel("ERROR")
        alone = run_hosts_alone(bootstrap, topic, outs[0], args.records, "at_least_once", work)
        in_spark = run_spark(spark, bootstrap, topic, outs[1], args.records, work)
        samples = latency(spark, bootstrap, in_spark["rate"] / 2, args.latency_seconds, work)
        ratio = in_spark["rate"] / alone["rate"]
        print(f"word count over {args.records:,} records ({PARTITIONS} partitions, 2 task hosts, batches of up to "
              f"{BATCH:,} records per task; cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.1f})")
        print(f"  hosts alone (batch loop):     {alone['rate']:,.0f} records/s ({alone['seconds']:.1f} s)")
        print(f"  through Spark (local[2]):     {in_spark['rate']:,.0f} records/s ({in_spark['seconds']:.1f} s, "
              f"{in_spark['rows']:,} output rows)")
        if samples:
            q = statistics.quantiles(samples, n=100)
            print(f"  latency at {in_spark['rate'] / 2:,.0f} records/s (half the sustained rate), {len(samples):,} "
                  f"output rows: p50 {statistics.median(samples):,.0f} ms, p99 {q[98]:,.0f} ms")
        print(f"ratio {ratio:.2f} target 0.70")


if __name__ == "__main__":
    main()
