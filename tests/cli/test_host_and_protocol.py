"""`streams-rt host restart` and `streams-rt protocol` against a real application (task hosts as OS
processes, the real broker), run as a user runs them: the rolling upgrade's two operator steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import assert_one_error_line, streams_rt
from tests.coordinator.settle import wait_until_settled
from tests.tasks import topologies
from tests.tasks.test_host import LINES, Apps, drain, last_values, wait_for

pytestmark = pytest.mark.broker


def test_restart_bounces_one_host_with_upgrade_from_and_the_toggle_switches_the_protocol(
        apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"wc-lines": 2, "wc-counts": 2})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    state_dir = tmp_path / "driver"
    app, loop = apps.start("word_count", hosts=2, **{"num.standby.replicas": 1, "state.dir": str(state_dir)})
    wait_until_settled(app, 2)
    where = ("--application-id", app.application_id, "--state-dir", state_dir)
    host = app.hosts["host-1"]
    name = next(h["name"] for h in app.coordinator.status()["hosts"] if h["endpoint"] == host.endpoint)

    result = streams_rt("host", "restart", name, "--set", "upgrade.from=2.3", *where)
    assert result.returncode == 0, result.stderr
    assert f"host {name} is restarting (upgrade.from=2.3)" in result.stdout
    assert "group stable at generation" in result.stdout
    assert "restarting as asked" in host.log_tail(50_000)
    members = app.coordinator.describe()["members"].values()
    assert sorted(m["protocol"] for m in members) == ["COOPERATIVE", "EAGER"]  # upgrade.from: EAGER, old version
    status = streams_rt("status", *where)
    assert status.returncode == 0 and " EAGER " in status.stdout, status.stdout

    result = streams_rt("protocol", "COOPERATIVE", *where)
    assert result.returncode == 0, result.stderr
    wait_for(lambda: app.coordinator.describe()["protocol_policy"].get("override") == "COOPERATIVE", 30,
             "the operator's override")
    assert streams_rt("protocol", "default", *where).returncode == 0

    name = next(h["name"] for h in app.coordinator.status()["hosts"] if h["endpoint"] == host.endpoint)
    result = streams_rt("host", "restart", name, "--unset", "upgrade.from", *where)  # the second bounce
    assert result.returncode == 0, result.stderr
    wait_for(lambda: {m["protocol"] for m in app.coordinator.describe()["members"].values()} == {"COOPERATIVE"},
             60, "every member cooperative after the second bounce")
    assert last_values(drain(loop)) == topologies.word_count_reference(LINES)


def test_a_restart_the_host_refuses_an_unknown_host_and_draining_the_only_host_are_one_line_errors(
        apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"nb-in": 1, "nb-out": 1})
    state_dir = tmp_path / "driver"
    app, _ = apps.start("numbers", hosts=1, **{"state.dir": str(state_dir)})
    wait_until_settled(app, 1)
    where = ("--application-id", app.application_id, "--state-dir", state_dir)
    name = app.coordinator.status()["hosts"][0]["name"]
    assert_one_error_line(streams_rt("host", "restart", name, "--set", "num.standby.replicas=-1", *where),
                          f"host {name} refused", "num.standby.replicas")
    assert_one_error_line(streams_rt("host", "restart", "nobody", *where), "no single host named 'nobody'", name)
    assert_one_error_line(streams_rt("drain", name, *where), f"host {name} is the only host")
    assert_one_error_line(streams_rt("drain", "nobody", *where), "no single host named 'nobody'", name)
    assert app.hosts["host-0"].alive
    result = streams_rt("host", "restart", name, "--set", "oops", *where)
    assert result.returncode == 2 and "'oops' is not KEY=VALUE" in result.stderr
