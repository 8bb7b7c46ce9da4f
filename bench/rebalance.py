"""Rebalance round latency of the coordinator over real Flight RPC: from the start of a round (the
join or trigger that opened it) to the delivery of the last member's assignment.

Members run in a few worker processes, each member with its own GroupMember thread and its own
Flight connection; the workers get the coordinator's secret in their environment, as hosts do.
Members hold their heartbeat open for the interval (long poll), so they learn of a round at once
and the figure is not floored by heartbeat.interval.ms; what remains is the RPC work.
Printed against a baseline measured in the same run (a one-member round) and against the heartbeat
interval (what a round would cost at least if members learnt of it only from periodic heartbeats).
Usage: .venv/bin/python bench/rebalance.py [--members 10 100 500] [--rounds 5]"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streams_rt.coordinator.service import Coordinator, CoordinatorConfig  # noqa: E402
from streams_rt.coordinator.streams_round import StreamsRoundPlanner  # noqa: E402
from streams_rt.protocol import TaskId  # noqa: E402

T = TypeVar("T")


class _Quiet:
    def on_tasks_revoked(self, tasks: frozenset[TaskId], generation: int) -> None: ...
    def on_tasks_assigned(self, tasks: frozenset[TaskId], generation: int) -> None: ...
    def on_tasks_lost(self, tasks: frozenset[TaskId], generation: int) -> None: ...


def worker(address: str, app: str, count: int, heartbeat_ms: int) -> None:
    """Runs `count` members until stdin closes."""
    from streams_rt.tasks.group_member import GroupMember
    from streams_rt.tasks.membership import MemberConfig
    from streams_rt.tasks.streams_codec import StreamsMemberCodec

    config = MemberConfig(app, address, session_timeout_ms=30_000, heartbeat_interval_ms=heartbeat_ms,
                          max_poll_interval_ms=60_000)
    members = [GroupMember(config, StreamsMemberCodec(uuid.uuid4()), _Quiet()) for _ in range(count)]
    for m in members:
        m.start()
    sys.stdin.read()
    for m in members:
        m.close(leave=False, timeout_s=2)


def settled(c: Coordinator, n: int) -> dict[str, Any] | None:
    d = c.describe()
    if d["state"] != "STABLE" or len(d["members"]) != n or d["pending_deliveries"]:
        return None
    if any(m["generation"] != d["generation"] or m.get("revoke") for m in d["members"].values()):
        return None
    return d


def wait(pred: Callable[[], T | None], timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while not (v := pred()):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)
    return v


def measure(n: int, rounds: int, processes: int, heartbeat_ms: int) -> list[float]:
    app = f"bench-{n}"
    tasks = [TaskId(s, p) for s in range(2) for p in range(n)]
    c = Coordinator(CoordinatorConfig(app), StreamsRoundPlanner(tasks))
    procs = []
    try:
        per = [n // processes + (1 if i < n % processes else 0) for i in range(processes)]
        for k in per:
            procs.append(subprocess.Popen(
                [sys.executable, __file__, "--worker", c.address, app, str(k), str(heartbeat_ms)],
                stdin=subprocess.PIPE, cwd=REPO, env={**os.environ, **(c.secret.environment() if c.secret else {})},
            ))
        wait(lambda: settled(c, n), 300, f"{n} members to settle")
        latencies = []
        for r in range(rounds):
            before = c.metrics.snapshot(0)
            c.request_rebalance("benchmark round")

            def round_over(before: dict[str, Any] = before) -> bool:
                done = c.metrics.snapshot(0)["rebalance-total"] > before["rebalance-total"]
                return done and settled(c, n) is not None

            wait(round_over, 300, f"round {r}")
            after = c.metrics.snapshot(0)
            latencies.append(after["rebalance-latency-total"] - before["rebalance-latency-total"])
        return latencies
    finally:
        for p in procs:
            try:
                if p.stdin is not None:  # always: the workers read it
                    p.stdin.close()
            except OSError:
                pass
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        c.close()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, nargs="+", default=[10, 100, 500])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--heartbeat-ms", type=int, default=200)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"rebalance round latency (first join/trigger -> last assignment delivered), "
          f"heartbeat.interval.ms={args.heartbeat_ms}, {args.processes} member processes, cpus={os.cpu_count()}")
    baseline = statistics.median(measure(1, args.rounds, 1, args.heartbeat_ms))
    print(f"baseline, measured in this run: a one-member round, {baseline:.0f} ms")
    print(f"{'members':>8} {'tasks':>6} {'rounds':>6} {'median ms':>10} {'max ms':>8} {'ms/member':>10} "
          f"{'x baseline':>10} {'x heartbeat':>11}")
    for n in args.members:
        lat = measure(n, args.rounds, min(args.processes, n), args.heartbeat_ms)
        median = statistics.median(lat)
        print(f"{n:>8} {2 * n:>6} {len(lat):>6} {median:>10.0f} {max(lat):>8.0f} {median / n:>10.1f} "
              f"{median / max(baseline, 1):>10.1f} {median / args.heartbeat_ms:>11.2f}", flush=True)


if __name__ == "__main__":
    main()
