"""Restore side by side: streams_rt against Kafka Streams' own restore of the same changelog topic on
the same broker (5M records by default, 16-byte keys, 100-byte values), from an empty state directory,
for one task and for 8 tasks at once on one host (our shared restore reader; Kafka Streams with one
stream thread).

Kafka Streams compacts while it restores; streams_rt restores with auto-compaction off, compacts only
an L0 that reached RocksDB's slowdown trigger, and leaves the rest to background compaction after
reopening. So two spans are printed for ours: until the stores are ready for processing, and until
RocksDB has no compaction running or pending. Kafka Streams is timed by its restore listener, from the
first store's restore start to the last one's end (bench/peers/kstreams/.../Restore.java; start() to
RUNNING, which adds its group join, is printed too). Each side runs in its own process.

    python bench/peers/restore.py [--records 5000000] [--tasks 1 8] [--bootstrap HOST:PORT]

Ends with `ratio <ours / Kafka Streams, records/s, compaction counted> target 1.50` per task count."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from tqdm import tqdm  # noqa: E402

from bench.peers.systems import KSTREAMS_BUILD, QUIET_JAVA  # noqa: E402
from bench.processing import bench_workspace  # noqa: E402
from streams_rt.protocol import TaskId, TopicPartition  # noqa: E402
from streams_rt.state import AT_LEAST_ONCE, StateConfig, StoreSpec, TaskState, changelog_topic  # noqa: E402
from streams_rt.state.stores import RocksDBKeyValueStore  # noqa: E402

KEY_BYTES, VALUE_BYTES = 16, 100
STORE = "bench"  # Restore.java's store: both sides read <application.id>-bench-changelog
TARGET = 1.5


def fill(bootstrap: str, app_id: str, records: int, tasks: int) -> None:
    """The changelog (compacted, one partition per task) and the input topic Kafka Streams' app needs."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(changelog_topic(app_id, STORE), tasks, 1, config={"cleanup.policy": "compact"}),
              NewTopic(f"{app_id}-input", tasks, 1)]
    for future in admin.create_topics(topics).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                         "compression.type": "lz4", "queue.buffering.max.messages": 500_000})
    rng = random.Random(records)
    topic = changelog_topic(app_id, STORE)
    with tqdm(total=records, desc=f"fill {topic}", unit="rec", unit_scale=True, leave=False) as bar:
        for i in range(records):
            key, value = rng.randbytes(KEY_BYTES), rng.randbytes(VALUE_BYTES)
            while True:
                try:
                    producer.produce(topic, value, key, partition=i % tasks)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 100_000 == 99_999:
                bar.update(100_000)
        if producer.flush(300):
            raise RuntimeError("filling the changelog timed out")


class CountingListener:
    def __init__(self) -> None:
        self.records = 0

    def on_restore_start(self, tp: TopicPartition, store: str, start_offset: int, end_offset: int) -> None:
        pass

    def on_batch_restored(self, tp: TopicPartition, store: str, batch_end_offset: int, num_restored: int) -> None:
        self.records += num_restored

    def on_restore_end(self, tp: TopicPartition, store: str, total_restored: int) -> None:
        pass


def compaction_busy(store: RocksDBKeyValueStore) -> bool:
    db = store.db
    return bool(db.property_int_value("rocksdb.num-running-compactions")
                or db.property_int_value("rocksdb.compaction-pending"))


def ours(bootstrap: str, app_id: str, tasks: int) -> dict[str, Any]:
    """Every task's store restored by one shared reader, as one host does; then RocksDB's deferred
    compaction waited for."""
    state_dir = Path(tempfile.mkdtemp(prefix="peers-restore-"))
    config = StateConfig(app_id, bootstrap, state_dir, processing_guarantee=AT_LEAST_ONCE)
    listener = CountingListener()
    try:
        with config.open_state_directory() as directory:
            reader = config.changelog_reader(listener)
            states = [TaskState(config, directory, TaskId(0, p), [StoreSpec(STORE)], reader) for p in range(tasks)]
            started = time.perf_counter()
            for state in states:
                state.open_active()
            reader.finish_restores()  # restore, flush, crowded L0 compacted, reopen, checkpoint
            ready = time.perf_counter() - started
            stores = [state.store(STORE) for state in states]
            while any(isinstance(s, RocksDBKeyValueStore) and compaction_busy(s) for s in stores):
                time.sleep(0.05)
            compacted = time.perf_counter() - started
            for state in states:
                state.close()
            reader.close()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    return {"records": listener.records, "seconds": ready, "compacted_seconds": compacted}


def kafka_streams(bootstrap: str, app_id: str, tasks: int, records: int) -> dict[str, Any]:
    state_dir = Path(tempfile.mkdtemp(prefix="peers-restore-kstreams-"))
    classpath = f"{KSTREAMS_BUILD / 'peers-kstreams-1.jar'}:{KSTREAMS_BUILD / 'libs'}/*"
    try:
        command = ["java", "-Xmx1g", QUIET_JAVA, "-cp", classpath, "peers.Restore", bootstrap, app_id, str(state_dir),
                   "1", str(records)]
        out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, timeout=1800).stdout
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def side_by_side(bootstrap: str, records: int, tasks: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fill a changelog of `records` over `tasks` partitions; restore it with ours (a child process)
    and with Kafka Streams; both results, after checking each restored every record."""
    app_id = f"peers-restore-{tasks}-{uuid.uuid4().hex[:6]}"
    fill(bootstrap, app_id, records, tasks)
    child = subprocess.run([sys.executable, __file__, "--bootstrap", bootstrap, "--ours", app_id, str(tasks)],
                           check=True, stdout=subprocess.PIPE, text=True).stdout
    mine: dict[str, Any] = json.loads(child.strip().splitlines()[-1])
    theirs = kafka_streams(bootstrap, app_id, tasks, records)
    for side in (mine, theirs):
        if side["records"] != records:
            raise RuntimeError(f"restore of {tasks} task(s) read {side['records']:,} of {records:,} records")
    return mine, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--tasks", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--bootstrap", help="an existing broker; default: start a dev broker")
    parser.add_argument("--ours", nargs=2, metavar=("APP_ID", "TASKS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ours:  # the child process of our side
        print(json.dumps(ours(args.bootstrap, args.ours[0], int(args.ours[1]))))
        return
    rows = []
    with bench_workspace("bench-peers-restore-", args.bootstrap) as (_, bootstrap, _pid):
        for tasks in args.tasks:
            rows.append((tasks, *side_by_side(bootstrap, args.records, tasks)))
    load = os.getloadavg()
    print(f"restore of {args.records:,} records (16-byte keys, 100-byte values) from an empty state directory; "
          f"cpus={os.cpu_count()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for tasks, mine, theirs in rows:
        n = args.records
        print(f"  {tasks} task(s): streams_rt ready {mine['seconds']:.1f} s ({n / mine['seconds']:,.0f} records/s), "
              f"compaction done {mine['compacted_seconds']:.1f} s ({n / mine['compacted_seconds']:,.0f} records/s); "
              f"Kafka Streams restore {theirs['restore_seconds']:.1f} s ({n / theirs['restore_seconds']:,.0f} "
              f"records/s; start() to RUNNING {theirs['seconds']:.1f} s)")
    for tasks, mine, theirs in rows:
        print(f"  {tasks} task(s): by time to ready {theirs['restore_seconds'] / mine['seconds']:.2f}x")
    for tasks, mine, theirs in rows:
        print(f"ratio {theirs['restore_seconds'] / mine['compacted_seconds']:.2f} target {TARGET:.2f}  "
              f"(restore of {tasks} task(s), compaction counted: streams_rt / Kafka Streams, records/s)")

if __name__ == "__main__":
    main()
