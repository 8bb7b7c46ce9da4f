"""The bench/peers workload in streams_rt, run in Spark local[2]: per-key count and sum in a RocksDB
store, every update to the output topic (the topology's sink). Runs until terminated.

As a Kafka Streams user would, it starts processing only once the group is stable with every task
host holding active tasks: hosts that start together join one at a time, and the first would
otherwise run every task while the rest hold warm-ups or standbys until a probing rebalance, minutes
later (see wait_for_group).

Scale-out (bench/peers/scaleout.py): when the file WORK_DIR/add-host appears, it starts one more task
host and writes WORK_DIR/scale-out.json once the group is stable again with the new host running
tasks: when that was, when the group's first round after the addition started, and which tasks moved.

    python bench/peers/apps/streams_rt_app.py BOOTSTRAP INPUT OUTPUT WORK_DIR BATCH
        [--standbys N] [--hosts N] [--acceptable-recovery-lag N] [--guarantee at_least_once|exactly_once_v2]"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from pyspark.sql.streaming.query import StreamingQuery  # noqa: E402

from streams_rt.coordinator.service import Coordinator  # noqa: E402
from streams_rt.rpc.batches import BatchError, HostClient  # noqa: E402
from streams_rt.spark.runtime import StreamsRuntime  # noqa: E402
from streams_rt.topology import Serdes, StreamsBuilder, Topology  # noqa: E402

GROUP_READY_TIMEOUT_S = 300.0
PROBE_AFTER_S = 2.0
ADD_HOST_FILE, SCALE_OUT_FILE = "add-host", "scale-out.json"
# A query that fails is started again (it resumes from the tasks' committed positions), each time
# counted here and shown beside the figures, so a runtime bug (as once the source's commit of a batch
# planned for a task that was moving, fixed in e319932) is reported rather than ends the run.
RESTARTS_FILE = "query-restarts"
# Where the micro-batches' time went (Spark's durationMs, median of the recent batches with input,
# and the hosts' split of their task batches),
# rewritten every DURATIONS_EVERY_S (the app is stopped by SIGTERM to its whole process tree, the
# Spark JVM too, so there is no asking Spark at exit); bench/peers/run.py prints it (the cost behind
# our latency and batch cadence).
DURATIONS_FILE = "batch-durations.txt"
DURATIONS_EVERY_S = 5.0


def amounts(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The decimal-string amounts as int64, on the whole batch."""
    return batch.set_column(1, "value", pc.cast(batch.column("value"), pa.int64()))


def count_and_sum(state: dict[str, Any]) -> str:
    return f"{state['count']},{int(state['sum'])}"


def topology(source: str, sink: str) -> Topology:
    """Column operations: the amounts parsed and aggregated per batch (the built-in mean keeps the
    count and sum), one store read and write per key per batch; only the output's formatting runs
    per record (per update)."""
    builder = StreamsBuilder()
    table = (builder.stream(source, Serdes.string(), Serdes.string()).map_batches(amounts, value_serde=Serdes.int64())
             .group_by_key().mean("count-sum"))
    table.to_stream().map_values(count_and_sum).to(sink, Serdes.string(), Serdes.string())
    return builder.build()


def group_ready(status: Mapping[str, Any], hosts: int) -> bool:
    """The coordinator's status (Coordinator.status()) shows a stable group of `hosts` members, each
    holding active tasks of the current generation with nothing left to revoke, and every task RUNNING."""
    members = status["hosts"]
    return (status["state"] == "STABLE" and len(members) == hosts and bool(status["tasks"])
            and all(m["active"] and not m["revoke"] and m["generation"] == status["generation"] for m in members)
            and all(t["state"] == "RUNNING" for t in status["tasks"]))


def waiting_for_probe(status: Mapping[str, Any], hosts: int) -> bool:
    """A stable group of `hosts` members where some member holds no active task (warm-ups or
    standbys only)."""
    members = status["hosts"]
    return status["state"] == "STABLE" and len(members) == hosts and any(not m["active"] for m in members)


def wait_for_group(coordinator: Coordinator, hosts: int, timeout_s: float) -> Mapping[str, Any]:
    """Until group_ready; the status then. Raises TimeoutError with the last status.

    A host that joins a moment after the others gets warm-ups or standbys only, even of empty
    changelogs (a store opened just before a round reports unknown offsets, so the assignor cannot
    count it caught up), and would wait for the probing rebalance (probing.rebalance.interval.ms, 10
    minutes): once the group has been stable so for PROBE_AFTER_S, this asks the coordinator for that
    rebalance now."""
    deadline = time.monotonic() + timeout_s
    stable_since: float | None = None
    while not group_ready(now := coordinator.status(), hosts):
        if time.monotonic() > deadline:
            raise TimeoutError(f"group not ready with {hosts} hosts after {timeout_s:.0f} s: "
                               f"state {now['state']}, hosts {[(m['name'], m['active']) for m in now['hosts']]}, "
                               f"tasks {[(t['task'], t['state']) for t in now['tasks']]}")
        if not waiting_for_probe(now, hosts):
            stable_since = None
        elif stable_since is None:
            stable_since = time.monotonic()
        elif time.monotonic() - stable_since > PROBE_AFTER_S:
            held = [(m["name"], m["active"], m["standby"], m["warmup"]) for m in now["hosts"]]
            print(f"bench: a host holds no active task (name, active, standby, warm-up: {held}); "
                  "asking for the probing rebalance now", flush=True)
            coordinator.request_rebalance("bench: a host holds no active task")
            stable_since = None
        time.sleep(0.05)
    return now


def owners(status: Mapping[str, Any]) -> dict[str, str | None]:
    return {t["task"]: t["active"] for t in status["tasks"]}


def scale_out(runtime: StreamsRuntime, hosts: int, work: Path) -> None:
    """Start one more task host; write SCALE_OUT_FILE once the group is ready with it (epoch ms)."""
    coordinator = runtime.app.coordinator
    before = coordinator.status()
    added_ms = time.time() * 1000
    runtime.app.start_host(f"host-{hosts}")
    after = wait_for_group(coordinator, hosts + 1, GROUP_READY_TIMEOUT_S)
    done_ms = time.time() * 1000
    rounds = [r for r in after["rebalances"] if r["generation"] > before["generation"]]
    moved = sorted(t for t, owner in owners(after).items() if owners(before).get(t) != owner)
    report = {"added_ms": added_ms, "round_started_ms": min((r["started_ms"] for r in rounds), default=None),
              "done_ms": done_ms, "moved": moved, "tasks": sorted(owners(after)),
              "generations": [r["generation"] for r in rounds]}
    (work / SCALE_OUT_FILE).write_text(json.dumps(report))
    print(f"scale-out: {report}", flush=True)


def batch_durations(query: StreamingQuery) -> str:
    """Spark's durationMs of the recent micro-batches that had input, as medians (ms), longest first."""
    batches = [p for p in query.recentProgress if p.get("numInputRows", 0) > 0]
    if not batches:
        return "no micro-batch with input in Spark's recent progress"
    phases = {name for p in batches for name in p["durationMs"]}
    medians = {name: statistics.median(p["durationMs"].get(name, 0) for p in batches) for name in phases}
    rows = statistics.median(p["numInputRows"] for p in batches)
    return (f"median of the last {len(batches)} micro-batches with input ({rows:,.0f} rows each), ms: "
            + ", ".join(f"{name} {ms:,.0f}" for name, ms in sorted(medians.items(), key=lambda kv: -kv[1])))


class HostTimings:
    """Where the hosts' task batches spent their time lately (BatchTimings summed over hosts and
    tasks, since the previous look), in ms per task batch: what addBatch holds besides Spark's own
    scheduling."""

    FIELDS = ("batches", "records", "consume_s", "process_s", "flush_s", "produce_s", "commit_s")

    def __init__(self, runtime: StreamsRuntime) -> None:
        self._runtime = runtime
        self._before: dict[str, dict[str, float]] = {}
        self._last = "hosts: no task batch yet"

    def recent(self) -> str:
        app = self._runtime.app
        window = dict.fromkeys(self.FIELDS, 0.0)
        for name, host in list(app.hosts.items()):
            if host.endpoint is None or not host.alive:
                continue
            try:
                with HostClient(host.endpoint, timeout_s=5, secret=app.coordinator.secret) as client:
                    now = client.status()["batches"]
            except BatchError:
                continue  # a host killed or moving: the others still tell
            before = self._before.get(name, {})
            for field in self.FIELDS:
                window[field] += now[field] - before.get(field, 0.0)
            self._before[name] = now
        batches = window["batches"]
        if batches > 0:  # else the last window that had batches (a run ends idle)
            self._last = (f"hosts, {DURATIONS_EVERY_S:.0f} s up to {time.strftime('%H:%M:%S')}: {batches:,.0f} task "
                          f"batches of {window['records'] / batches:,.0f} records on average, ms per task batch: "
                          + ", ".join(f"{field.removesuffix('_s')} {window[field] / batches * 1000:,.0f}"
                                      for field in self.FIELDS[2:]))
        return self._last


def start_query(runtime: StreamsRuntime) -> StreamingQuery:
    """The micro-batches' rows are the output the hosts already wrote to the sink topic: Spark's
    `noop` sink runs each batch and drops them (a `foreachBatch` count did the same for one more
    round trip to Python per micro-batch: 40-50 ms of a 250-290 ms floor, measured side by side)."""
    return runtime.stream().writeStream.format("noop").trigger(processingTime="0 seconds").start()


def main() -> None:
    from streams_rt.spark.session import build_session

    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "source", "sink", "work"):
        parser.add_argument(name)
    parser.add_argument("batch", type=int)
    parser.add_argument("--standbys", type=int, default=0)
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--acceptable-recovery-lag", type=int, default=10_000)
    parser.add_argument("--guarantee", default="at_least_once", help="processing.guarantee")
    args = parser.parse_args()
    # The runtime's INFO lines (the coordinator's rounds: what moved and why), timestamped, in the system's log.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("streams_rt").setLevel(logging.INFO)
    work = Path(args.work)
    spark = build_session("local[2]", "peers-streams-rt")
    spark.sparkContext.setLogLevel("ERROR")
    props: dict[str, Any] = {"application.id": f"peers-streams-rt-{uuid.uuid4().hex[:6]}",
                             "bootstrap.servers": args.bootstrap, "max.records.per.task.per.batch": args.batch,
                             "num.standby.replicas": args.standbys, "heartbeat.interval.ms": 500,
                             "session.timeout.ms": 10_000, "local.task.hosts": args.hosts,
                             "acceptable.recovery.lag": args.acceptable_recovery_lag,
                             "processing.guarantee": args.guarantee}
    runtime = StreamsRuntime(spark, "bench.peers.apps.streams_rt_app:topology", props,
                             topology_args={"source": args.source, "sink": args.sink}, work_dir=work)
    query = None
    try:
        wait_for_group(runtime.app.coordinator, args.hosts, GROUP_READY_TIMEOUT_S)
        query = start_query(runtime)
        scaled, restarts, durations_at = False, 0, time.monotonic()
        timings = HostTimings(runtime)
        while True:
            if time.monotonic() - durations_at > DURATIONS_EVERY_S:
                (work / DURATIONS_FILE).write_text(f"{batch_durations(query)}\n  {timings.recent()}")
                durations_at = time.monotonic()
            if not query.isActive:
                error = query.exception()
                if error is None:
                    break
                restarts += 1
                print(f"bench: query failed, restart {restarts}: {str(error).splitlines()[0][:300]}", flush=True)
                (work / RESTARTS_FILE).write_text(str(restarts))
                query = start_query(runtime)
            if not scaled and (work / ADD_HOST_FILE).exists():
                scaled = True
                scale_out(runtime, args.hosts, work)
            time.sleep(0.2)
    finally:
        if query is not None:
            query.stop()
        runtime.stop()


if __name__ == "__main__":
    main()
