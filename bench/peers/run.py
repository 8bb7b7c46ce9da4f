"""Side-by-side benchmark of streams_rt against what a Spark team would pick instead: Kafka Streams,
Spark's Kafka source with groupBy().agg(), Spark's transformWithStateInPandas and Quix Streams, on the
same machine, the same broker and the same input, in one run.

Workload (bench/peers/workload.py): per-key count and sum over N records (default 10M), 100k keys, 4
input partitions, every update to an output topic, state in RocksDB everywhere. Each system runs in
its own processes with two cores' worth of parallelism (local[2], two stream threads, two Quix
processes); its output is checked against the expected totals of every key before any figure of it
is printed. Figures: sustained throughput (records/s from the first output burst to the last output,
broker clock) and peak RSS of all its processes (sampled every 0.5 s); latency p50/p99 at half
streams_rt's throughput (bench/peers/latency.py); failover, a worker killed mid-stream, with one standby
and without (bench/peers/failover.py); scale-out, one worker added mid-stream, the throughput of the
tasks that stayed during the change against before (bench/peers/scaleout.py); restore of a 5M-record
changelog, 1 task and 8, ours against Kafka Streams' own (bench/peers/restore.py).

    python bench/peers/run.py [--records 10000000] [--keys 100000] [--systems streams_rt,Quix Streams]

It prints the table (a streams_rt advantage column: >1 means streams_rt is better), the load average
and the `ratio <measured> target <goal>` lines, and writes bench/results/peers.png."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.peers import failover, restore, scaleout  # noqa: E402
from bench.peers.latency import Feed, LatencyTracker, feed  # noqa: E402
from bench.peers.processes import SystemProcesses  # noqa: E402
from bench.peers.report import BASELINE, Figure, Results, chart, table  # noqa: E402
from bench.peers.systems import SYSTEMS, Run, System, environment, restarts_note  # noqa: E402
from bench.peers.workload import Expected, OutputWatch, create_topics, produce, wait_for_output  # noqa: E402
from bench.processing import bench_workspace  # noqa: E402

CHART = REPO / "bench" / "results" / "peers.png"
THROUGHPUT, RSS, LATENCY_P50, LATENCY_P99 = "throughput", "peak RSS", "latency p50", "latency p99"
LATENCY_CATCH_UP_S = 60.0
FAILOVER_STANDBY, FAILOVER_NO_STANDBY = "failover, 1 standby", "failover, no standby"
FAILOVER_CONTROL = "failover control, no kill"  # the same figure with nothing killed (bench/peers/failover.py)
SCALE_OUT = "scale-out, tasks that stayed"
# (system, figure, streams_rt's advantage it must reach): issue 19's targets.
TARGETS = [
    ("Spark transformWithStateInPandas", THROUGHPUT, 2.0),
    ("Quix Streams", THROUGHPUT, 1.0),
    ("Kafka Streams", THROUGHPUT, 1 / 3),
    ("Kafka Streams", "restore, 1 task", 1.5),
    ("Kafka Streams", "restore, 8 tasks", 1.5),
]


def measure(system: System, run: Run, expected: Expected, timeout_s: float, results: Results) -> None:
    """Run one system until its output is right for every key; add its figures (NaN when wrong)."""
    run.work.mkdir(parents=True)
    print(f"{time.strftime('%H:%M:%S')} {system.name} ...", file=sys.stderr)
    procs = SystemProcesses(system.commands(run), environment(), run.work / "system.log")
    watch = OutputWatch(run.bootstrap, run.sink)
    try:
        verified = wait_for_output(watch, expected, timeout_s, procs.running)
        reason = "exited" if not procs.running() else f"not done after {timeout_s:.0f} s"
    finally:
        procs.stop()
        watch.close()
    wrong = watch.mismatches(expected)
    print_batch_durations(system.name, run)
    if not verified:
        keys = sum(1 for c in expected.counts if c)
        print(f"  {system.name}: output WRONG or incomplete ({reason}): {wrong:,} of {keys:,} keys differ, "
              f"{watch.outputs:,} outputs; log: {run.work / 'system.log'}", file=sys.stderr)
        print("".join(_tail(run.work / "system.log")), file=sys.stderr)
    rate = watch.rate(expected) if verified else float("nan")
    note = (f"{watch.outputs:,} outputs" if verified else "output wrong: not measured") + restarts_note(run)
    if system.share > 1:
        note += f", first {expected.records:,} records only"
    results.add(Figure(system.name, THROUGHPUT, rate, "records/s", note=note))
    parts = ", ".join(f"{name} {size / 2**20:,.0f} MB" for name, size in sorted(procs.peak_parts.items()))
    results.add(Figure(system.name, RSS, procs.peak_rss / 2**20, "MB", higher_is_better=False, note=parts))


def print_batch_durations(name: str, run: Run) -> None:
    """What streams_rt's bench app wrote of its micro-batches' durations (bench/peers/apps)."""
    durations = run.work / "batch-durations.txt"
    if durations.exists():
        print(f"  {name}: {durations.read_text()}", file=sys.stderr)


def measure_latency(system: System, run: Run, keys: int, rate: float, seconds: float, results: Results) -> None:
    """Run one system on input produced at `rate` records/s; add its latency p50 and p99 (NaN, with a
    note, when its output is wrong or it fell behind: not every timed record came out in time)."""
    run.work.mkdir(parents=True)
    create_topics(run.bootstrap, run.source, [run.sink])
    print(f"{time.strftime('%H:%M:%S')} {system.name}: latency at {rate:,.0f} records/s ...", file=sys.stderr)
    feed_state = Feed(keys)
    tracker = LatencyTracker(feed_state)
    procs = SystemProcesses(system.commands(run), environment(), run.work / "system.log")
    watch = OutputWatch(run.bootstrap, run.sink, on_output=tracker)
    try:
        ready = feed(run.bootstrap, run.source, feed_state, rate, seconds, lambda: watch.end_offset() > 0)
        verified = ready and wait_for_output(watch, feed_state.expected(), LATENCY_CATCH_UP_S, procs.running)
    finally:
        procs.stop()
        watch.close()
    print_batch_durations(system.name, run)
    timed = tracker.timed()
    note = f"{len(tracker.samples):,} of {timed:,} timed records"
    if not verified or len(tracker.samples) < timed or len(tracker.samples) < 100:
        note = f"fell behind or wrong: {note} out {LATENCY_CATCH_UP_S:.0f} s after the feed stopped"
        p50 = p99 = float("nan")
    else:
        q = statistics.quantiles(tracker.samples, n=100)
        p50, p99 = statistics.median(tracker.samples), q[98]
    results.add(Figure(system.name, LATENCY_P50, p50, "ms", higher_is_better=False, note=note))
    results.add(Figure(system.name, LATENCY_P99, p99, "ms", higher_is_better=False))


def measure_failover(case: failover.Failover, run: Run, keys: int, rate: float, seconds: float,
                     state_records: int, results: Results) -> None:
    label = "no standbys" if case.standbys is None else f"num.standby.replicas={case.standbys}"
    kind = "failover" if case.victim is not None else "failover control, nothing killed"
    print(f"{time.strftime('%H:%M:%S')} {case.system}: {kind} ({label}) at {rate:,.0f} records/s ...",
          file=sys.stderr)
    worst, note = failover.measure(case, run, keys, rate, seconds, state_records)
    name = (FAILOVER_CONTROL if case.victim is None else FAILOVER_STANDBY if case.standbys == 1
            else FAILOVER_NO_STANDBY)
    results.add(Figure(case.system, name, worst, "ms", higher_is_better=False,
                       note=note if case.standbys is not None else f"{note}; it has no standbys"))


def measure_scale_out(case: scaleout.ScaleOut, run: Run, keys: int, rate: float, results: Results) -> None:
    print(f"{time.strftime('%H:%M:%S')} {case.system}: scale-out ({case.label}) at {rate:,.0f} records/s ...",
          file=sys.stderr)
    fraction, note = scaleout.measure(case, run, keys, rate)
    results.add(Figure(case.system, SCALE_OUT, fraction * 100, "% of before", note=note))


def measure_restore(bootstrap: str, records: int, tasks: int, results: Results) -> None:
    """Restore figures (records/s): ours with the deferred compaction counted, Kafka Streams' own."""
    print(f"{time.strftime('%H:%M:%S')} restore of {records:,} records, {tasks} task(s) ...", file=sys.stderr)
    mine, theirs = restore.side_by_side(bootstrap, records, tasks)
    name = f"restore, {tasks} task{'s' if tasks > 1 else ''}"
    results.add(Figure(BASELINE, name, records / mine["compacted_seconds"], "records/s",
                       note=f"ready {mine['seconds']:.1f} s, compaction done {mine['compacted_seconds']:.1f} s"))
    results.add(Figure("Kafka Streams", name, records / theirs["restore_seconds"], "records/s",
                       note=f"restore {theirs['restore_seconds']:.1f} s, RUNNING after {theirs['seconds']:.1f} s"))


def _tail(log: Path, lines: int = 30) -> list[str]:
    try:
        return log.read_text(errors="replace").splitlines(keepends=True)[-lines:]
    except OSError:
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--systems", help="comma-separated names (default: all)")
    parser.add_argument("--bootstrap", help="an existing broker; default: start a dev broker")
    parser.add_argument("--latency-seconds", type=float, default=30.0,
                        help="timed seconds of input at half streams_rt's throughput (0: no latency figures)")
    parser.add_argument("--failover-seconds", type=float, default=30.0,
                        help="timed seconds of input for the failover figures (0: none)")
    parser.add_argument("--failover-rate", type=float, default=failover.DEFAULT_RATE,
                        help="input records/s of the failover runs, the same for every system "
                             "(bench/peers/failover.py)")
    parser.add_argument("--failover-state", type=int, default=2_000_000,
                        help="records of distinct keys each system processes before the failover feed: the "
                             "state a lost worker's tasks restore without a standby (bench/peers/failover.py)")
    parser.add_argument("--scale-out", action=argparse.BooleanOptionalAction, default=True,
                        help="the scale-out figures (bench/peers/scaleout.py), at a third of streams_rt's throughput")
    parser.add_argument("--restore-records", type=int, default=5_000_000,
                        help="changelog records for the restore figures (bench/peers/restore.py; 0: none)")
    parser.add_argument("--chart", type=Path, default=CHART)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the systems (finally blocks) when killed
    wanted = [s for s in SYSTEMS if args.systems is None or s.name in args.systems.split(",")]
    timeout_s = 300 + args.records / 5_000
    results = Results(versions={s.name: s.version() for s in wanted})
    with bench_workspace("bench-peers-", args.bootstrap) as (work, bootstrap, _):
        stamp = str(int(time.time()))
        sinks = {s.name: f"peers-output-{i}-{stamp}" for i, s in enumerate(wanted)}
        inputs: dict[int, tuple[str, Expected]] = {}
        for share in sorted({s.share for s in wanted}):
            source = f"peers-input-{share}-{stamp}"
            create_topics(bootstrap, source, [sinks[s.name] for s in wanted if s.share == share])
            inputs[share] = source, produce(bootstrap, source, args.records // share, args.keys)
        for i, system in enumerate(wanted):
            source, expected = inputs[system.share]
            batch = max(10_000, expected.records // 20)
            measure(system, Run(bootstrap, source, sinks[system.name], work / f"system-{i}", batch), expected,
                    timeout_s, results)
        ours = results.value(BASELINE, THROUGHPUT)
        if args.latency_seconds > 0 and ours is not None and ours == ours:
            for i, system in enumerate(wanted):
                run = Run(bootstrap, f"peers-latency-input-{i}-{stamp}", f"peers-latency-output-{i}-{stamp}",
                          work / f"latency-{i}", int(ours * 5))  # no cap in practice: all that is there
                measure_latency(system, run, args.keys, ours / 2, args.latency_seconds, results)
        if args.failover_seconds > 0 and ours is not None and ours == ours:
            names = {s.name for s in wanted}
            for i, case in enumerate(f for f in failover.FAILOVERS if f.system in names):
                run = Run(bootstrap, f"peers-failover-input-{i}-{stamp}", f"peers-failover-output-{i}-{stamp}",
                          work / f"failover-{i}", int(ours * 5))
                measure_failover(case, run, args.keys, args.failover_rate, args.failover_seconds, args.failover_state,
                                 results)
        if args.scale_out and ours is not None and ours == ours:
            names = {s.name for s in wanted}
            for i, scale in enumerate(c for c in scaleout.SCALE_OUTS if c.system in names):
                run = Run(bootstrap, f"peers-scale-input-{i}-{stamp}", f"peers-scale-output-{i}-{stamp}",
                          work / f"scale-out-{i}", int(ours * 5))
                measure_scale_out(scale, run, args.keys, ours / 3, results)
        if args.restore_records > 0 and {BASELINE, "Kafka Streams"} <= {s.name for s in wanted}:
            for tasks in (1, 8):
                measure_restore(bootstrap, args.restore_records, tasks, results)
    load = os.getloadavg()
    heading = (f"per-key count and sum over {args.records:,} records ({args.keys:,} keys, 4 partitions, batches "
               f"of up to 1/20 of the input; cpus={os.cpu_count()}, "
               f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
    print(heading)
    print(table(results))
    args.chart.parent.mkdir(parents=True, exist_ok=True)
    args.chart.with_suffix(".txt").write_text(f"{heading}\n{table(results)}\n")  # the table beside the chart
    title = f"per-key count and sum, {args.records:,} records, {args.keys:,} keys (load {load[0]:.1f})"
    chart(results, title, args.chart)
    print(f"chart: {args.chart}")
    for peer, name, goal in TARGETS:
        figure = next((f for f in results.figures if f.system == peer and f.name == name), None)
        ratio = results.ratio(figure) if figure is not None else None
        if ratio is not None:
            print(f"ratio {ratio:.2f} target {goal:.2f}  ({name}: streams_rt / {peer})")
    with_standby, without = results.value(BASELINE, FAILOVER_STANDBY), results.value(BASELINE, FAILOVER_NO_STANDBY)
    if with_standby and without and with_standby == with_standby and without == without:
        print(f"ratio {without / with_standby:.2f} target 5.00  (failover: streams_rt without a standby / with one)")
    control = results.value(BASELINE, FAILOVER_CONTROL)
    if with_standby and control and with_standby == with_standby and control == control:
        print(f"  with a standby the failover adds {with_standby - control:,.0f} ms to the figure with nothing killed "
              f"({control:,.0f} ms)")
    spark = results.value("Spark SQL groupBy().agg()", FAILOVER_NO_STANDBY)
    if with_standby and spark and with_standby == with_standby and spark == spark:
        print(f"ratio {spark / with_standby:.2f} target 1.00  (failover: Spark SQL's state reload on executor loss / "
              f"streams_rt with a standby)")
    ours = results.value(BASELINE, THROUGHPUT)
    faster = max((results.value(peer, THROUGHPUT) or 0.0 for peer in ("Kafka Streams", "Spark SQL groupBy().agg()")),
                 default=0.0)
    if ours and faster and ours == ours and faster == faster:
        print(f"ratio {ours / faster:.2f} target 1.00  (throughput: streams_rt / the faster of Kafka Streams and "
              f"Spark SQL)")
    rss = results.value(BASELINE, RSS)
    if rss and rss == rss:
        print(f"ratio {2048 / rss:.2f} target 1.00  (peak RSS: 2.0 GB / streams_rt's {rss:,.0f} MB)")
    stayed = results.value(BASELINE, SCALE_OUT)
    if stayed is not None and stayed == stayed:
        print(f"ratio {stayed / 100:.2f} target 0.90  (scale-out: streams_rt's tasks that stayed, throughput during "
              f"the change / before)")


if __name__ == "__main__":
    main()
