"""Host supervision with real task hosts on the real broker: a host killed with kill -9 beside the
driver is restarted where it ran, with its state directory (the same process id, its stores
reopened), twice in a row; the restarts are logged, counted in the coordinator's metrics, and
`streams-rt status` shows each host's new pid. Nothing is lost over the kills."""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import uuid
from pathlib import Path

import pytest

from streams_rt.cli.status import render_status
from streams_rt.runtime.local import LocalApplication
from tests.coordinator.harness import wait_until
from tests.tasks import topologies
from tests.tasks.test_host import FAST, LINES, Apps, drain, last_values

pytestmark = pytest.mark.broker


def reported_pids(app: LocalApplication) -> dict[str, int | None]:
    """Host name -> the pid its member reported, read from the coordinator's operator view."""
    by_endpoint = {h["endpoint"]: h.get("pid") for h in app.coordinator.status()["hosts"]}
    return {name: by_endpoint.get(host.endpoint) for name, host in app.hosts.items()}


def replaced(app: LocalApplication, name: str, dead_pid: int) -> bool:
    """A new process of `name` serves (its ready file names its endpoint)."""
    host = app.hosts[name]
    return host.alive and host.proc.pid != dead_pid and host.endpoint is not None


def process_id(app: LocalApplication, name: str) -> str:
    """The process id kept in the host's state directory (Kafka Streams' kafka-streams-process-metadata)."""
    metadata = app.work_dir / name / "state" / app.application_id / "kafka-streams-process-metadata"
    return str(json.loads(metadata.read_text())["processId"])


def test_a_host_killed_twice_is_restarted_in_its_state_directory_and_counted(
    apps: Apps, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="streams_rt.runtime.host_supervisor")
    apps.create_topics({"wc-lines": 3, "wc-counts": 3})
    half = len(LINES) // 2
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES[:half])])
    properties = {"application.id": f"sup-{uuid.uuid4().hex[:8]}", "bootstrap.servers": apps.bootstrap,
                  "processing.guarantee": "exactly_once_v2", **FAST}
    app = LocalApplication("tests.tasks.topologies:word_count", properties, tmp_path / "app", hosts=2,
                           topology_args={"suffix": f"-{apps.suffix}"}, supervise=True)
    loop = app.loop(max_records_per_task=100)
    try:
        app.wait_until_running(loop)
        rows = drain(loop)
        identity = process_id(app, "host-0")
        for kill in (1, 2):
            victim = app.hosts["host-0"].proc.pid
            os.kill(victim, signal.SIGKILL)
            wait_until(functools.partial(replaced, app, "host-0", victim), 60, f"host-0 restarted after kill {kill}")
            app.wait_until_running(loop)
            assert process_id(app, "host-0") == identity, "restarted in the same state directory"
            assert app.coordinator.status()["metrics"]["host-restart-total"] == kill
        wait_until(lambda: reported_pids(app) == {name: h.proc.pid for name, h in app.hosts.items()}, 30,
                   "both hosts' pids reported")
        shown = render_status(app.coordinator.status())
        for name, host in app.hosts.items():
            endpoint = str(host.endpoint)
            assert any(endpoint in line and f" {host.proc.pid} " in f" {line} " for line in shown.splitlines()), \
                (name, shown)
        apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i)
                                  for i, line in enumerate(LINES[half:], half)])
        rows += drain(loop)
        assert last_values(rows) == topologies.word_count_reference(LINES)
    finally:
        loop.close()
        app.close()
    messages = [r.getMessage() for r in caplog.records]
    killed = [m for m in messages if m.startswith("task host host-0 killed by SIGKILL; restarting it")]
    assert len(killed) == 2 and "(restart 2 in a row)" in killed[1], messages
    assert sum(m.startswith("task host host-0 restarted (pid ") for m in messages) == 2


def test_a_host_stopped_on_purpose_stays_stopped(apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"wc-lines": 3, "wc-counts": 3})
    properties = {"application.id": f"sup-{uuid.uuid4().hex[:8]}", "bootstrap.servers": apps.bootstrap, **FAST}
    app = LocalApplication("tests.tasks.topologies:word_count", properties, tmp_path / "app", hosts=2,
                           topology_args={"suffix": f"-{apps.suffix}"}, supervise=True)
    try:
        app.stop_host("host-1", kill=True)
        wait_until(lambda: len(app.coordinator.describe()["members"]) == 1, 60, "host-1 gone from the group")
        app.stop_host("host-0")
        wait_until(lambda: not app.coordinator.describe()["members"], 60, "host-0 gone from the group")
        assert not app.hosts and app.coordinator.status()["metrics"]["host-restart-total"] == 0
    finally:
        app.close()
