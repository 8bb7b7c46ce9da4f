"""`streams-rt status` against a real application (task hosts as OS processes, the real broker): it
finds the coordinator through the driver's coordinator file, authenticates with its secret, and
prints the group, hosts, tasks with state and lag, and the last rebalances; failures are one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from streams_rt.rpc.auth import SharedSecret
from tests.cli.helpers import assert_one_error_line, streams_rt
from tests.coordinator.settle import wait_until_settled
from tests.tasks.test_host import LINES, Apps, drain

pytestmark = pytest.mark.broker



def test_status_shows_the_group_hosts_tasks_and_rebalances(apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"wc-lines": 3, "wc-counts": 3})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    state_dir = tmp_path / "driver"
    app, loop = apps.start("word_count", hosts=2, **{"num.standby.replicas": 1, "state.dir": str(state_dir)})
    drain(loop)
    wait_until_settled(app, 2)

    result = streams_rt("status", "--application-id", app.application_id, "--state-dir", state_dir)
    assert result.returncode == 0, result.stderr
    print(result.stdout)
    out = result.stdout
    status = app.coordinator.status()
    assert f"application {app.application_id}  coordinator {app.coordinator.address}" in out
    assert f"status page {app.coordinator.http_url}" in out
    assert f"group STABLE  generation {status['generation']}  protocol COOPERATIVE  hosts 2  tasks 6 (6 RUNNING)" in out
    pids = {h.endpoint: h.proc.pid for h in app.hosts.values()}
    queries = {h.endpoint: h.query_endpoint for h in app.hosts.values()}
    for host in status["hosts"]:
        row = next(line for line in out.splitlines() if line.startswith(host["name"]))
        assert host["endpoint"] in row and all(t in row for t in host["active"])
        assert f" {pids[host['endpoint']]} " in row and f"http://{queries[host['endpoint']]}" in row
    for task in status["tasks"]:
        row = next(line for line in out.splitlines() if line.startswith(task["task"] + " "))
        assert " RUNNING " in row
        names = {h["member"]: h["name"] for h in status["hosts"]}
        assert names[task["active"]] in row
        for standby in task["standby"]:
            lag = task["lags"].get(standby)
            assert (f"{names[standby]} ({lag})" if lag is not None and lag >= 0 else names[standby]) in row
    assert "LAST REBALANCES (newest first)" in out
    assert re.search(rf"generation {status['generation']}  \d\d:\d\d:\d\d  \d+ ms  COOPERATIVE  2 hosts", out)
    assert "moved: " in out

    as_json = streams_rt("status", "-a", app.application_id, "--state-dir", state_dir, "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["generation"] == status["generation"]
    assert {(h["endpoint"], h["pid"], h["query_endpoint"]) for h in json.loads(as_json.stdout)["hosts"]} == {
        (h.endpoint, h.proc.pid, h.query_endpoint) for h in app.hosts.values()}

    # From another machine: the address, and the secret in the environment.
    secret = app.coordinator.secret
    assert secret is not None
    remote = streams_rt("status", "-a", app.application_id, "--coordinator", app.coordinator.address,
                        env=secret.environment())
    assert remote.returncode == 0 and f"generation {status['generation']}" in remote.stdout
    assert_one_error_line(streams_rt("status", "-a", app.application_id, "--coordinator", app.coordinator.address,
                                     env=SharedSecret.generate().environment()), "refused the secret")
    assert_one_error_line(streams_rt("status", "-a", "other", "--coordinator", app.coordinator.address,
                                     env=secret.environment()), "INCONSISTENT_GROUP")


def test_status_without_a_coordinator_fails_in_one_line(tmp_path: Path) -> None:
    assert_one_error_line(streams_rt("status", "-a", "nothing-here", "--state-dir", tmp_path),
                          "no coordinator of application 'nothing-here' runs on this machine",
                          str(tmp_path / "nothing-here.coordinator.json"))
    (tmp_path / "gone.coordinator.json").write_text(json.dumps({
        "application_id": "gone", "address": "grpc://127.0.0.1:1", "http": None, "pid": 1, "started": "0",
        "secret": None, "truststore": None}))
    assert_one_error_line(streams_rt("status", "-a", "gone", "--state-dir", tmp_path), "has exited", "stale")
    (tmp_path / "bad.coordinator.json").write_text("{")
    assert_one_error_line(streams_rt("status", "-a", "bad", "--state-dir", tmp_path), "cannot be read")
    assert_one_error_line(streams_rt("status", "-a", "x", "--coordinator", "grpc://127.0.0.1:1"),
                          "cannot reach the coordinator")
    missing = streams_rt("status")
    assert missing.returncode == 2 and "Missing option '--application-id'" in missing.stderr
    assert streams_rt("status", "--help").returncode == 0
