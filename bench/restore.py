"""Restore benchmark: our changelog restore against confluent-kafka's raw consume, on the same topic.

For each size (default 1M and 5M records; 16-byte keys, 100-byte values) it fills a changelog topic,
then measures, each phase in a fresh child process so peak RSS is per phase:
  raw consume   confluent-kafka consume() batches with the restore consumer's settings, records counted;
  restore       TaskState.open_active() and the shared ChangelogReader on an empty state directory: the
                real restore path, timed from the first record read to the store reopened for processing;
  rocksdb write WriteBatch puts of the same shape into a fresh store, no Kafka (batch build, write
                and flush, all timed).
It prints the rates, restore / raw consume (target >= 0.80), each phase's peak RSS (VmHWM), and where
the CPU went: each phase's process CPU (all threads), its main thread's CPU, and the dev broker's CPU
over the same interval. From those it prints the best restore / raw ratio this machine's cores allow
for the work the restore did: the restore cannot finish before its main thread has run, nor before
all its CPU (plus the broker's) fits on the cores.

    python bench/restore.py [--records 1000000 5000000] [--bootstrap HOST:PORT] [--repeat N]

Without --bootstrap it starts its own dev broker in a temporary directory (stopped at exit).
"""

from __future__ import annotations

import argparse
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
from pathlib import Path
from typing import Any, NoReturn

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import rocksdict  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka import TopicPartition as KafkaTopicPartition  # noqa: E402
from tqdm import tqdm  # noqa: E402

from streams_rt.protocol import TaskId, TopicPartition  # noqa: E402
from streams_rt.state import (  # noqa: E402
    AT_LEAST_ONCE,
    StateConfig,
    StoreSpec,
    TaskState,
    changelog_topic,
    ensure_changelog_topics,
)
from streams_rt.state.restore import CONSUME_BATCH, restore_consumer  # noqa: E402
from streams_rt.state.stores import RocksDBKeyValueStore  # noqa: E402

KEY_BYTES, VALUE_BYTES = 16, 100
STORE = "bench"
TASK = TaskId(0, 0)


class CpuMeter:
    """CPU seconds of this process (all threads), of the calling thread, and of the broker process
    (when its pid is known), between `start` and `stop`."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.result: dict[str, float] = {}

    def _now(self) -> tuple[float, float, float | None]:
        return time.process_time(), time.thread_time(), _process_cpu(self.broker_pid)

    def start(self) -> None:
        self._start = self._now()

    def stop(self) -> None:
        process, thread, broker = self._now()
        self.result = {"process_cpu": process - self._start[0], "main_thread_cpu": thread - self._start[1]}
        if broker is not None and self._start[2] is not None:
            self.result["broker_cpu"] = broker - self._start[2]


def _process_cpu(pid: int | None) -> float | None:
    """User + system CPU seconds of another process, from /proc (None: unknown or gone)."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


# -- phases (each runs in its own process) ---------------------------------------------------
def phase_raw(args: argparse.Namespace) -> dict[str, Any]:
    consumer = restore_consumer(args.bootstrap, f"bench-raw-{uuid.uuid4().hex[:6]}")
    consumer.assign([KafkaTopicPartition(args.topic, 0, 0)])
    cpu = CpuMeter(args.broker_pid)
    count, started = 0, time.perf_counter()
    cpu.start()
    with tqdm(total=args.records, desc="raw consume", unit="rec", unit_scale=True, leave=False) as bar:
        while count < args.records:
            messages = consumer.consume(CONSUME_BATCH, 0.2)
            if messages and messages[-1].error() is not None:
                messages = messages[:-1]  # the partition EOF event
            count += len(messages)
            bar.update(len(messages))
    seconds = time.perf_counter() - started
    cpu.stop()
    consumer.close()
    return {"records": count, "seconds": seconds, **cpu.result}


def phase_restore(args: argparse.Namespace) -> dict[str, Any]:
    state_dir = Path(tempfile.mkdtemp(prefix="bench-state-"))
    config = StateConfig(args.app_id, args.bootstrap, state_dir, processing_guarantee=AT_LEAST_ONCE)
    timings: dict[str, float] = {}
    cpu = CpuMeter(args.broker_pid)

    class Listener:
        def __init__(self) -> None:
            self.bar: tqdm[NoReturn] | None = None

        def on_restore_start(self, tp: TopicPartition, store: str, start_offset: int, end_offset: int) -> None:
            timings["start"] = time.perf_counter()
            cpu.start()
            self.bar = tqdm(total=end_offset - start_offset, desc="restore", unit="rec", unit_scale=True, leave=False)

        def on_batch_restored(self, tp: TopicPartition, store: str, batch_end_offset: int, num_restored: int) -> None:
            assert self.bar is not None
            self.bar.update(num_restored)

        def on_restore_end(self, tp: TopicPartition, store: str, total_restored: int) -> None:
            timings["records"] = total_restored
            assert self.bar is not None
            self.bar.close()

    try:
        with config.open_state_directory() as directory:
            reader = config.changelog_reader(Listener())
            state = TaskState(config, directory, TASK, [StoreSpec(STORE)], reader)
            started = time.perf_counter()
            state.open_active()  # lock, checkpoint, watermarks, fencing
            reader.finish_restores()  # restore, flush, reopen, checkpoint
            # Timed up to a store ready for processing: the last memtable flushes, any L0 compaction
            # and the reopen count, so no restore work escapes the clock.
            timings["end"] = time.perf_counter()
            cpu.stop()
            total = timings["end"] - started
            count = state.kv_store(STORE).approximate_count()
            state.close()
            reader.close()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    return {"records": timings["records"], "seconds": timings["end"] - timings["start"],
            "open_seconds": total, "approximate_count": count, **cpu.result}


def phase_rocksdb(args: argparse.Namespace) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="bench-rocksdb-"))
    store = RocksDBKeyValueStore(STORE, directory)
    store.open(bulk=True)
    write_opt = rocksdict.WriteOptions()
    write_opt.disable_wal = True  # type: ignore[method-assign, assignment]  # a property; rocksdict's stub says a method
    rng = random.Random(7)
    values = [rng.randbytes(VALUE_BYTES) for _ in range(1024)]  # random, so as incompressible as the topic's
    done, started = 0, time.perf_counter()
    try:
        # Everything is timed, key making included (like taking keys from messages), so RocksDB's
        # background flushes cannot hide in untimed gaps.
        with tqdm(total=args.records, desc="rocksdb write", unit="rec", unit_scale=True, leave=False) as bar:
            while done < args.records:
                n = min(CONSUME_BATCH, args.records - done)
                blob = rng.randbytes(KEY_BYTES * n)
                batch = rocksdict.WriteBatch(raw_mode=True)
                put = batch.put
                for i in range(n):
                    put(blob[i * KEY_BYTES:(i + 1) * KEY_BYTES], values[i & 1023])
                store.db.write(batch, write_opt)
                done += n
                bar.update(n)
            store.db.flush()
        seconds = time.perf_counter() - started
    finally:
        store.close()
        shutil.rmtree(directory, ignore_errors=True)
    return {"records": done, "seconds": seconds}


PHASES = {"raw": phase_raw, "restore": phase_restore, "rocksdb": phase_rocksdb}


def run_phase(name: str, bootstrap: str, topic: str, app_id: str, records: int,
              broker_pid: int | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", name, "--bootstrap", bootstrap, "--topic", topic,
           "--app-id", app_id, "--records", str(records)]
    if broker_pid is not None:
        cmd += ["--broker-pid", str(broker_pid)]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


# -- driver ----------------------------------------------------------------------------------
def fill_topic(bootstrap: str, topic: str, records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                         "compression.type": "lz4", "queue.buffering.max.messages": 500_000})
    rng = random.Random(records)
    with tqdm(total=records, desc=f"fill {topic}", unit="rec", unit_scale=True, leave=False) as bar:
        for i in range(records):
            key, value = rng.randbytes(KEY_BYTES), rng.randbytes(VALUE_BYTES)
            while True:
                try:
                    producer.produce(topic, value, key, partition=0)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 100_000 == 99_999:
                bar.update(100_000)
        bar.update(records % 100_000)
        if producer.flush(120):
            raise RuntimeError("filling the topic timed out")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--bootstrap", help="an existing broker; default: start a dev broker")
    parser.add_argument("--repeat", type=int, default=3, help="measure each phase this many times, keep the best")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--app-id", help=argparse.SUPPRESS)
    parser.add_argument("--broker-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase:
        args.records = args.records[0]
        result = PHASES[args.phase](args)
        result["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(result))
        return

    logging.basicConfig(level=logging.WARNING)
    broker, broker_pid = None, None
    if args.bootstrap is None:
        from streams_rt.kafka.dev_broker import DevBroker

        broker_dir = Path(tempfile.mkdtemp(prefix="bench-broker-"))
        broker = DevBroker(broker_dir, heap="1g")
        print("starting a dev broker ...", flush=True)
        info = broker.start(owned=True)
        args.bootstrap, broker_pid = info.bootstrap_servers, info.pid
    try:
        rows = []
        for records in args.records:
            app_id = f"bench-{uuid.uuid4().hex[:8]}"
            topic = changelog_topic(app_id, STORE)
            ensure_changelog_topics(args.bootstrap, [StoreSpec(STORE).changelog(app_id)], partitions=1)
            started = time.perf_counter()
            fill_topic(args.bootstrap, topic, records)
            print(f"{records:,} records in {topic} ({time.perf_counter() - started:.1f} s to fill)", flush=True)
            best: dict[str, dict[str, Any]] = {}
            for _ in range(args.repeat):
                for phase in ("raw", "restore", "rocksdb"):
                    result = run_phase(phase, args.bootstrap, topic, app_id, records, broker_pid)
                    if result["records"] != records:
                        raise RuntimeError(f"{phase} saw {result['records']} records, expected {records}")
                    if phase not in best or result["seconds"] < best[phase]["seconds"]:
                        best[phase] = result
            rows.append((records, best))
            _print_row(records, best)
        print()
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"summary (rates in records/s, best of {args.repeat}; RSS = peak resident set of each phase's "
              f"process; {os.cpu_count()} CPUs, load average now {load})")
        print(f"{'records':>10} {'restore':>10} {'raw consume':>12} {'rocksdb write':>14} "
              f"{'restore/raw':>12} {'RSS restore':>12} {'RSS raw':>8} {'RSS rocksdb':>12}")
        for records, best in rows:
            rate = {p: records / r["seconds"] for p, r in best.items()}
            print(f"{records:>10,} {rate['restore']:>10,.0f} {rate['raw']:>12,.0f} {rate['rocksdb']:>14,.0f} "
                  f"{rate['restore'] / rate['raw']:>12.2f} {best['restore']['peak_rss_mb']:>10.0f}MB "
                  f"{best['raw']['peak_rss_mb']:>6.0f}MB {best['rocksdb']['peak_rss_mb']:>10.0f}MB")
        print()
        print("where the CPU went (seconds over each phase's measured interval; broker: the dev broker, "
              "n/a with --bootstrap)")
        print(f"{'records':>10} {'phase':>8} {'wall':>7} {'process':>8} {'main thread':>12} {'broker':>7}")
        for records, best in rows:
            for phase in ("raw", "restore"):
                r = best[phase]
                broker_cpu = f"{r['broker_cpu']:>7.2f}" if "broker_cpu" in r else f"{'n/a':>7}"
                print(f"{records:>10,} {phase:>8} {r['seconds']:>7.2f} {r['process_cpu']:>8.2f} "
                      f"{r['main_thread_cpu']:>12.2f} {broker_cpu}")
        cores = os.cpu_count() or 1
        print()
        print(f"the best restore / raw these {cores} cores allow for the restore's measured work: "
              "raw wall / max(restore main thread CPU, (restore process + broker CPU) / cores)")
        for records, best in rows:
            print(f"{records:>10,}: {_ceiling(best, cores):.2f} here; "
                  f"{_ceiling(best, None):.2f} with a core for every thread (the main thread alone)")
    finally:
        if broker is not None:
            broker.stop()
            shutil.rmtree(broker.directory, ignore_errors=True)


def _ceiling(best: dict[str, dict[str, Any]], cores: int | None) -> float:
    """raw wall / the shortest restore wall that its CPU use permits on `cores` (None: unlimited)."""
    restore = best["restore"]
    floor: float = restore["main_thread_cpu"]
    if cores is not None:
        floor = max(floor, (restore["process_cpu"] + restore.get("broker_cpu", 0.0)) / cores)
    raw_seconds: float = best["raw"]["seconds"]
    return raw_seconds / floor


def _print_row(records: int, best: dict[str, dict[str, Any]]) -> None:
    restore, raw, rocks = best["restore"], best["raw"], best["rocksdb"]
    print(f"  raw consume   {records / raw['seconds']:>12,.0f} rec/s  ({raw['seconds']:.2f} s,"
          f" peak RSS {raw['peak_rss_mb']:.0f} MB)")
    print(f"  restore       {records / restore['seconds']:>12,.0f} rec/s  ({restore['seconds']:.2f} s; "
          f"open_active {restore['open_seconds']:.2f} s; peak RSS {restore['peak_rss_mb']:.0f} MB)")
    print(f"  rocksdb write {records / rocks['seconds']:>12,.0f} rec/s  ({rocks['seconds']:.2f} s,"
          f" peak RSS {rocks['peak_rss_mb']:.0f} MB)")
    serial = records / (raw["seconds"] + rocks["seconds"])
    print(f"  consume then write, back to back (the bound without overlap): {serial:,.0f} rec/s; "
          f"restore reaches {records / restore['seconds'] / serial:.2f} of it")
    print(f"  restore / raw consume = {raw['seconds'] / restore['seconds']:.2f}  (target >= 0.80)", flush=True)


if __name__ == "__main__":
    main()
