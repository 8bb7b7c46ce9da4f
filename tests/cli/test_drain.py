"""`streams-rt drain HOST` against three real task hosts (OS processes, real RocksDB, the real broker)
while the batch loop keeps running and more input arrives: warm-ups first, each active moved once
caught up, the drained host ends with nothing and exits; at every generation every task has an
active owner except through the cooperative hand-off (revoked in one generation, assigned in the
next); the counts are exact."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from streams_rt.tasks import ownership_log
from tests.coordinator.settle import wait_until
from tests.tasks import topologies
from tests.tasks.test_host import LINES, Apps, drain, last_values, output_rows

pytestmark = pytest.mark.broker

REPO = Path(__file__).resolve().parents[2]


def actives_by_generation(events: list[dict[str, object]]) -> dict[int, dict[str, set[str]]]:
    """generation -> host -> the active tasks it was given at that generation."""
    found: dict[int, dict[str, set[str]]] = defaultdict(dict)
    for event in events:
        if event["event"] == ownership_log.ASSIGNED:
            assert isinstance(event["generation"], int) and isinstance(event["active"], list)
            found[event["generation"]][str(event["host"])] = set(map(str, event["active"]))
    return found


def test_drain_moves_every_task_with_no_owner_gap_and_stops_the_host(apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"wc-lines": 4, "wc-counts": 4})
    first, second = LINES[:400], LINES[400:]
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(first)])
    audit = tmp_path / "ownership.log"
    state_dir = tmp_path / "driver"
    app, loop = apps.start("word_count", hosts=3, **{
        "state.dir": str(state_dir), "task.ownership.log": str(audit), "acceptable.recovery.lag": 5,
        "statestore.cache.max.bytes": 0})
    # Stable with every task running (a warm-up of the joins may wait for the probing rebalance, minutes away).
    wait_until(app, lambda s: s["state"] == "STABLE" and len(s["hosts"]) == 3
               and all(t["state"] == "RUNNING" for t in s["tasks"]))
    rows = drain(loop)
    settled = app.coordinator.status()
    where = ("--application-id", app.application_id, "--state-dir", state_dir)
    leaving = max(settled["hosts"], key=lambda h: len(h["active"]))  # a host with tasks to hand over
    process = next(h for h in app.hosts.values() if h.endpoint == leaving["endpoint"])
    assert leaving["active"], settled
    start_generation = settled["generation"]

    command = subprocess.Popen([sys.executable, "-m", "streams_rt.cli", "drain", leaving["name"], *map(str, where)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    more = threading.Thread(target=apps.produce, args=("wc-lines", [
        (f"line-{400 + i}", line.encode(), 2_000 + i) for i, line in enumerate(second)]))
    more.start()
    deadline = time.monotonic() + 180
    seen_draining = False
    while command.poll() is None:  # batches go on while the drain runs
        rows += output_rows(loop.run_once().rows())
        seen_draining |= any(h["draining"] for h in app.coordinator.status()["hosts"]
                             if h["member"] == leaving["member"])
        assert time.monotonic() < deadline, "the drain did not end within 180 s"
    out, err = command.communicate()
    more.join()
    assert command.returncode == 0, (out, err)
    assert f"draining host {leaving['name']}" in out and f"host {leaving['name']} drained and gone" in out, out
    assert process.proc.wait(30) == 0
    assert seen_draining, "the status never showed the host draining"
    log = process.log_tail(200_000)
    assert "drained: every task of this host runs elsewhere now; stopping" in log, log[-3000:]
    rows += drain(loop)
    assert last_values(rows) == topologies.word_count_reference(LINES)

    events = ownership_log.read(audit)
    assert ownership_log.check(events) == []
    by_generation = actives_by_generation(events)
    tasks = {t["task"] for t in settled["tasks"]}
    generations = sorted(g for g in by_generation if g >= start_generation)
    drained_host = {str(e["host"]) for e in events if e.get("pid") == process.proc.pid}.pop()
    for generation in generations:
        owned = set().union(*by_generation[generation].values())
        missing = tasks - owned
        # a task may be missing only while it is handed over: revoked at this generation, owned at the next
        nxt = by_generation.get(generation + 1)
        assert not missing or (nxt is not None and missing <= set().union(*nxt.values())), (generation, missing)
    last = generations[-1]
    assert not by_generation[last].get(drained_host), by_generation[last]
    warmups = [m for e in app.coordinator.status()["rebalances"] if e["generation"] > start_generation
               for m in e["moves"] if m["kind"] == "warmup" and m["to"] is not None]
    assert warmups, "the drain placed no warm-up"
