"""Processing benchmark: word count over N records (default 5M; one word per record from a vocabulary
of 10k, 2 input partitions), run by two task hosts through the batch loop (examples/word_count.py's
topology: column operations, a combiner before the repartition topic), side by side with Kafka
Streams' own word count (bench/processing_java, the reference implementation on the JVM: one instance
with 2 stream threads, its default commit interval, on the same topic and broker, in the same run),
and the ceiling: a loop that only consumes and deserializes the same records.

For both guarantees (at_least_once, exactly_once_v2) it prints streams_rt's records/s next to Kafka
Streams', the CPU per input record of each (all processes: hosts, loop and coordinator, broker), the
per-record cost split the hosts measured (consume; operators: deserialization, user code, column
operations, aggregation into the caches; store: cache flush and store writes; produce: repartition,
output and changelog sends; commit: transaction or flush, RocksDB, checkpoint) and each host's peak
RSS. The last line reads `ratio <the lower of streams_rt / Kafka Streams over both guarantees> target
1.50`.

    python bench/processing.py [--records 5000000] [--bootstrap HOST:PORT]

Without --bootstrap it starts its own dev broker in a temporary directory (stopped at exit)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from tqdm import tqdm

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from streams_rt.kafka.dev_broker import DevBroker  # noqa: E402
from streams_rt.kafka.jvm import compile_java, find_java  # noqa: E402
from streams_rt.kafka.offsets import end_offsets  # noqa: E402
from streams_rt.protocol import TopicPartition  # noqa: E402
from streams_rt.rpc.batches import HostClient  # noqa: E402
from streams_rt.runtime.local import LocalApplication  # noqa: E402
from streams_rt.tasks.input_reader import input_consumer  # noqa: E402
from streams_rt.topology import Serdes  # noqa: E402

JAVA_SRC = REPO / "bench" / "processing_java" / "KafkaStreamsWordCount.java"
JAVA_OUT = REPO / "build" / "bench" / "processing_java"
VOCABULARY = 10_000
PARTITIONS = 2
BATCH = int(os.environ.get("BENCH_BATCH", 200_000))  # max.records.per.task.per.batch


def produce(bootstrap: str, topic: str, count: int) -> list[bytes]:
    rng = random.Random(7)
    words = [f"word{i:05d}".encode() for i in range(VOCABULARY)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 1_000_000, "compression.type": "lz4"})
    with tqdm(total=count, desc="produce", unit="rec", unit_scale=True, leave=False) as bar:
        for i in range(count):
            while True:
                try:
                    producer.produce(topic, rng.choice(words), partition=i % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 100_000 == 0:
                bar.update(100_000 if i else 0)
                producer.poll(0)
    producer.flush()
    return words


@contextlib.contextmanager
def bench_workspace(prefix: str, bootstrap: str | None) -> Iterator[tuple[Path, str, int | None]]:
    """A scratch directory, and `bootstrap` or else a dev broker started in it (its pid, for CPU
    accounting); the broker is stopped and the directory removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    broker = None
    try:
        broker_pid = None
        if bootstrap is None:
            print("starting a dev broker ...", file=sys.stderr)
            broker = DevBroker(work / "broker", heap="1g")
            info = broker.start(owned=True)
            bootstrap, broker_pid = info.bootstrap_servers, info.pid
        yield work, bootstrap, broker_pid
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def ceiling(bootstrap: str, topic: str, count: int, broker_pid: int | None) -> dict[str, Any]:
    """Records/s of consuming and deserializing every record with the hosts' consumer settings, and
    the CPU it took (this process and the broker)."""
    consumer = input_consumer(bootstrap, f"bench-ceiling-{uuid.uuid4().hex[:6]}")
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    consumer.assign([KafkaTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    deserialize = Serdes.string().deserialize
    cpu, broker_cpu = time.process_time(), process_cpu(broker_pid)
    seen, started = 0, time.perf_counter()
    while seen < count:
        messages = consumer.consume(10_000, 1.0)
        values = [deserialize(m.value()) for m in messages if m.error() is None]
        seen += len(values)
    seconds = time.perf_counter() - started
    cpu, broker_cpu = time.process_time() - cpu, process_cpu(broker_pid) - broker_cpu
    consumer.close()
    return {"rate": count / seconds, "seconds": seconds, "cpu": cpu, "broker_cpu": broker_cpu}


def process_cpu(pid: int | None) -> float:
    """User + system CPU seconds of a process so far (0 when unknown or gone)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(bootstrap: str, topic: str, out_topic: str, count: int, guarantee: str, work: Path,
        broker_pid: int | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {
        "application.id": f"bench-wc-{guarantee}-{uuid.uuid4().hex[:6]}", "bootstrap.servers": bootstrap,
        "processing.guarantee": guarantee, "heartbeat.interval.ms": 500, "session.timeout.ms": 10_000,
    }
    app = LocalApplication("examples.word_count:topology", props, work / props["application.id"], hosts=2,
                           topology_args={"lines": topic, "counts": out_topic})
    loop = app.loop(max_records_per_task=BATCH)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        app.wait_until_running(loop)
        inputs = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        pids = [h.proc.pid for h in app.hosts.values()]
        cpu_before = [process_cpu(pid) for pid in pids]
        loop_cpu, broker_cpu = time.process_time(), process_cpu(broker_pid)
        started = time.perf_counter()
        with tqdm(total=count, desc=guarantee, unit="rec", unit_scale=True, leave=False) as bar:
            done = 0
            while True:
                result = loop.run_once()
                consumed = sum(r for t, r in result.records.items() if t.subtopology == 0)
                done += consumed
                bar.update(consumed)
                if not result.records:
                    _, statuses = loop.status()
                    if done >= count and loop.lag(statuses) == 0:
                        break
                    time.sleep(0.02)
        seconds = time.perf_counter() - started
        cpu = {"hosts": sum(process_cpu(pid) - before for pid, before in zip(pids, cpu_before, strict=True)),
               "loop and coordinator": time.process_time() - loop_cpu,
               "broker": process_cpu(broker_pid) - broker_cpu}
        assert all(loop.positions[tp] >= o for tp, o in end_offsets(admin, inputs).items())
        timings: dict[str, float] = {}
        rss = {}
        for name, host in app.hosts.items():
            with HostClient(str(host.endpoint), secret=app.coordinator.secret) as client:
                status = client.status()
            for key, value in status["batches"].items():
                timings[key] = timings.get(key, 0) + value
            label = f"{name} ({len(status['active'])} active, {len(status['standby'])} standby)"
            rss[label] = peak_rss_mb(status["pid"])
        return {"seconds": seconds, "rate": count / seconds, "timings": timings, "rss": rss, "cpu": cpu}
    finally:
        loop.close()
        app.close()


def kafka_streams(bootstrap: str, topic: str, count: int, guarantee: str, work: Path,
                  broker_pid: int | None) -> dict[str, Any]:
    """Kafka Streams' word count on the same input: seconds from its first input record to the end of
    its close (the last commit included), its CPU and peak RSS, as the Java program reports them, and
    the broker's CPU over the whole run (start-up included, when the broker is idle)."""
    classpath = compile_java([JAVA_SRC], JAVA_OUT)
    suffix = uuid.uuid4().hex[:6]
    command = [find_java(), "-Xmx1g", "-cp", classpath, "KafkaStreamsWordCount", bootstrap, topic,
               f"bench-ks-counts-{suffix}", f"bench-ks-wc-{guarantee}-{suffix}", str(work / f"ks-state-{suffix}"),
               guarantee, str(count), str(PARTITIONS)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(f"bench-ks-counts-{suffix}", PARTITIONS, 1)]).values():
        future.result()
    print(f"Kafka Streams word count ({guarantee}) ...", file=sys.stderr)
    broker_cpu = process_cpu(broker_pid)
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    broker_cpu = process_cpu(broker_pid) - broker_cpu
    if result.returncode != 0:
        raise RuntimeError(f"Kafka Streams word count failed ({result.returncode}):\n{result.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    if report["records"] < count:
        raise RuntimeError(f"Kafka Streams counted {report['records']} of {count} records")
    report["rate"] = count / report["seconds"]
    report["broker_cpu_s"] = broker_cpu
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--bootstrap", help="an existing broker; default: start a dev broker")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with bench_workspace("bench-processing-", args.bootstrap) as (work, bootstrap, broker_pid):
        suffix = uuid.uuid4().hex[:6]
        topic, out = f"bench-words-{suffix}", f"bench-counts-{suffix}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1), NewTopic(out, PARTITIONS, 1)]).values():
            future.result()
        produce(bootstrap, topic, args.records)
        top = ceiling(bootstrap, topic, args.records, broker_pid)
        ceiling_rate = top["rate"]
        guarantees = ("at_least_once", "exactly_once_v2")
        results = {g: run(bootstrap, topic, out, args.records, g, work, broker_pid) for g in guarantees}
        reference = {g: kafka_streams(bootstrap, topic, args.records, g, work, broker_pid) for g in guarantees}
        load = os.getloadavg()
        print(f"word count over {args.records:,} records ({VOCABULARY:,} distinct words, {PARTITIONS} partitions, "
              f"2 task hosts, batches of up to {BATCH:,} records per task; cpus={os.cpu_count()}, "
              f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")
        print(f"  ceiling (consume + deserialize only): {ceiling_rate:,.0f} records/s, "
              f"{(top['cpu'] + top['broker_cpu']) / args.records * 1e6:.1f} us of CPU per record")
        ratios = []
        for guarantee, r in results.items():
            k = reference[guarantee]
            ratio = r["rate"] / k["rate"]
            ratios.append(ratio)
            ours_cpu = sum(r["cpu"].values()) / args.records * 1e6
            theirs_cpu = (k["cpu_s"] + k["broker_cpu_s"]) / args.records * 1e6
            print(f"  {guarantee}: streams_rt {r['rate']:,.0f} records/s ({r['seconds']:.1f} s), Kafka Streams "
                  f"{k['rate']:,.0f} records/s ({k['seconds']:.1f} s): {ratio:.2f}x; CPU per input record "
                  f"streams_rt {ours_cpu:.1f} us, Kafka Streams {theirs_cpu:.1f} us (broker included in both)")
            t = r["timings"]
            split = {name: t[f"{field}_s"] / args.records * 1e6 for name, field in
                     (("consume", "consume"), ("operators", "process"), ("store", "flush"), ("produce", "produce"),
                      ("commit", "commit"))}
            print("    streams_rt's hosts, us per input record (both subtopologies, summed over hosts): "
                  + ", ".join(f"{name} {us:.2f}" for name, us in split.items())
                  + f"; {int(t['batches'])} task batches; CPU: "
                  + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in r["cpu"].items())
                  + "; peak RSS " + ", ".join(f"{h} {mb:.0f} MB" for h, mb in sorted(r["rss"].items())))
            print(f"    Kafka Streams: its JVM {k['cpu_s']:.1f} s of CPU, broker {k['broker_cpu_s']:.1f} s; "
                  f"peak RSS {k['peak_rss_mb']:.0f} MB")
        print(f"ratio {min(ratios):.2f} target 1.50")


if __name__ == "__main__":
    main()
