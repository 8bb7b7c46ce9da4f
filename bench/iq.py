"""Interactive-query benchmark: point lookups over HTTP on loopback against a real task host whose
store holds --records keys, at concurrency 1 and 16, and in the same run a direct rocksdict get loop
over the same RocksDB files as the floor.

A one-host application materialises a table (16-byte keys, 100-byte values) through the batch loop;
this process then drives the host's query endpoint with keep-alive HTTP/1.1 connections on one
uvloop event loop (a minimal client, so that the client's cost stays small beside the server's),
each connection asking for random present keys back to back, for --seconds per concurrency. Then
the host stops and the store's directory is opened with rocksdict for the floor. It prints p50, p99
and lookups/s for each, and ends with two lines against the targets (p99 under 5 ms at concurrency
16, at least 5,000 lookups/s per host):

    ratio <p99 at concurrency 16 / 5 ms> target 1.00        (at most 1 meets it)
    ratio <lookups/s at concurrency 16 / 5,000> target 1.00  (at least 1 meets it)

    python bench/iq.py [--records 1000000] [--seconds 10] [--bootstrap HOST:PORT]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import rocksdict  # noqa: E402
import uvloop  # noqa: E402

from bench.processing import bench_workspace  # noqa: E402
from streams_rt.kafka.partitioner import partition_for  # noqa: E402
from streams_rt.rpc.http_auth import bearer_headers  # noqa: E402
from streams_rt.runtime.local import LocalApplication  # noqa: E402
from streams_rt.topology import Serdes, StreamsBuilder, Topology  # noqa: E402

PARTITIONS = 2
STORE = "bench-table"
VALUE_BYTES = 100
TARGET_P99_MS = 5.0
TARGET_RATE = 5_000.0
CONCURRENCIES = (1, 16)


def table(topic: str = "bench-iq") -> Topology:
    """The hosts' topology: the topic materialised as a queryable table."""
    builder = StreamsBuilder()
    builder.table(topic, Serdes.string(), Serdes.string(), store=STORE)
    return builder.build()


def key(i: int) -> str:
    return f"{i:016d}"


def load(bootstrap: str, topic: str, records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20,
                         "compression.type": "lz4", "partitioner": "murmur2_random"})
    rng = random.Random(5)
    value = rng.randbytes(VALUE_BYTES // 2).hex().encode()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, key(i).encode())
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


async def drive(endpoint: str, concurrency: int, seconds: float, records: int, authorization: str = "") -> list[float]:
    """Latencies (s) of every lookup that `concurrency` keep-alive connections made in `seconds`;
    `authorization` is the run's secret as a header value (the endpoint takes it)."""
    host, _, port = endpoint.rpartition(":")
    deadline = time.perf_counter() + seconds
    latencies: list[float] = []

    async def connection(seed: int) -> None:
        rng = random.Random(seed)
        reader, writer = await asyncio.open_connection(host, int(port))
        while time.perf_counter() < deadline:
            request = (f"GET /v1/stores/{STORE}/keys/{key(rng.randrange(records))} HTTP/1.1\r\n"
                       f"Host: {endpoint}\r\n" + (f"Authorization: {authorization}\r\n" if authorization else "")
                       + "\r\n").encode()
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"lookup failed: {head[:40]!r} {body[:200]!r}")
        writer.close()

    await asyncio.gather(*(connection(i) for i in range(concurrency)))
    return latencies


def floor(store_dir: Path, records: int, seconds: float) -> list[float]:
    """Latencies of direct rocksdict gets of random present keys on the store's own files (the
    task's: `<subtopology>_<partition>/rocksdb/<store>`, so the keys of that partition)."""
    partition = int(store_dir.parent.parent.name.rpartition("_")[2])
    rng = random.Random(9)
    mine = [k for k in (key(rng.randrange(records)).encode() for _ in range(200_000))
            if partition_for(k, PARTITIONS) == partition]
    db = rocksdict.Rdict(str(store_dir), rocksdict.Options(raw_mode=True),
                         access_type=rocksdict.AccessType.read_only())
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            k = mine[len(latencies) % len(mine)]
            started = time.perf_counter()
            found = db.get(k)
            latencies.append(time.perf_counter() - started)
            if found is None:
                raise RuntimeError(f"key {k!r} is missing from {store_dir}")
    finally:
        db.close()
    return latencies


def summary(latencies: list[float], seconds: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {"p50_ms": 1000 * ordered[len(ordered) // 2], "p99_ms": 1000 * ordered[int(len(ordered) * 0.99)],
            "rate": len(ordered) / seconds, "count": len(ordered),
            "mean_ms": 1000 * statistics.fmean(ordered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--bootstrap", default=None, help="a running broker (default: a dev broker of its own)")
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with bench_workspace("bench-iq-", args.bootstrap) as (work, bootstrap, _):
        topic = f"bench-iq-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            future.result()
        print(f"producing {args.records:,} records ...", file=sys.stderr)
        load(bootstrap, topic, args.records)
        properties: dict[str, Any] = {"application.id": f"bench-iq-{topic}", "bootstrap.servers": bootstrap,
                                      "commit.interval.ms": 1000}
        app = LocalApplication("bench.iq:table", properties, work / "app", hosts=1, topology_args={"topic": topic})
        loop = app.loop(max_records_per_task=250_000)
        try:
            app.wait_until_running(loop)
            print("materialising the table ...", file=sys.stderr)
            started = time.perf_counter()
            processed = 0
            while processed < args.records:
                processed += sum(loop.run_once().records.values())
            print(f"  {processed:,} records in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            endpoint = app.hosts["host-0"].query_endpoint
            assert endpoint is not None
            uvloop.install()
            bearer = bearer_headers(app.coordinator.secret).get("authorization", "")
            asyncio.run(drive(endpoint, 4, 1.0, args.records, bearer))  # warm-up: connections, caches
            for concurrency in CONCURRENCIES:
                print(f"lookups at concurrency {concurrency} for {args.seconds:.0f} s ...", file=sys.stderr)
                latencies = asyncio.run(drive(endpoint, concurrency, args.seconds, args.records, bearer))
                results[f"http c={concurrency}"] = summary(latencies, args.seconds)
        finally:
            loop.close()
            app.close()
        store_dirs = sorted((work / "app" / "host-0" / "state").glob(f"*/*/rocksdb/{STORE}"))
        floor_latencies: list[float] = []
        for store_dir in store_dirs:  # one store per task: the keys are split between them
            floor_latencies += floor(store_dir, args.records, args.seconds / len(store_dirs))
        results["rocksdict get (floor)"] = summary(floor_latencies, args.seconds)

    print(f"\npoint lookups on a {args.records:,}-key store ({PARTITIONS} tasks, one host, loopback; "
          f"cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.1f})")
    print(f"{'':24} {'p50 ms':>9} {'p99 ms':>9} {'lookups/s':>11}")
    for name, r in results.items():
        print(f"{name:24} {r['p50_ms']:>9.3f} {r['p99_ms']:>9.3f} {r['rate']:>11,.0f}")
    top = results[f"http c={CONCURRENCIES[-1]}"]
    print(f"ratio {top['p99_ms'] / TARGET_P99_MS:.2f} target 1.00")
    print(f"ratio {top['rate'] / TARGET_RATE:.2f} target 1.00")


if __name__ == "__main__":
    main()
