"""`streams-rt upgrade` against a real application (three task hosts as OS processes, the real
broker) that starts on a stand-in for the old release (metadata version 10, EAGER): the checked
upgrade runs both bounces to the end; pointed at the old release by mistake, it stops after the
first restart with one line naming the failed check, and restarts nothing more."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.protocol import LATEST_SUPPORTED_VERSION, RebalanceProtocol
from streams_rt.runtime.local import LocalApplication
from streams_rt.tasks.release_stand_in import ReleaseStandIn
from tests.cli.helpers import assert_one_error_line, streams_rt
from tests.coordinator.settle import wait_until_settled

pytestmark = pytest.mark.broker

OLD = ReleaseStandIn(LATEST_SUPPORTED_VERSION - 1, RebalanceProtocol.EAGER)
FAST = {"group.initial.rebalance.delay.ms": 0,
        "heartbeat.interval.ms": 300, "session.timeout.ms": 6000, "commit.interval.ms": 500,
        "num.standby.replicas": 1}


@pytest.fixture
def old_app(kafka_broker: BrokerInfo, tmp_path: Path) -> Iterator[LocalApplication]:
    suffix = f"-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(f"wc-{t}{suffix}", 2, 1) for t in ("lines", "counts")]).values():
        future.result()
    properties = {"application.id": f"upgrade-{suffix[1:]}", "bootstrap.servers": kafka_broker.bootstrap_servers,
                  "state.dir": str(tmp_path / "driver"), **FAST,
                  # the interpreter the test below names as the new release's (the running one is always allowed)
                  "host.restart.allowed.interpreters": str(tmp_path / "old" / "bin" / "python")}
    app = LocalApplication("tests.tasks.topologies:word_count", properties, tmp_path / "app", hosts=3,
                           topology_args={"suffix": suffix}, release_stand_in=OLD)
    try:
        wait_until_settled(app, 3)
        yield app
    finally:
        app.close()


def versions(app: LocalApplication) -> set[tuple[int, int, str]]:
    return {(h["version"], h["latest_supported_version"], h["rebalance_protocol"])
            for h in app.coordinator.status()["hosts"]}


def test_the_checked_upgrade_runs_both_bounces(old_app: LocalApplication, tmp_path: Path) -> None:
    assert versions(old_app) == {(10, 10, "EAGER")}
    where = ("-a", old_app.application_id, "--state-dir", tmp_path / "driver")
    dry = streams_rt("upgrade", "--to", sys.executable, "--from", "2.3", "--dry-run", *where)
    assert dry.returncode == 0 and "dry run: nothing restarted" in dry.stdout, dry.stderr
    assert versions(old_app) == {(10, 10, "EAGER")}

    result = streams_rt("upgrade", "--to", sys.executable, "--from", "2.3", "--latest-version", "11", *where,
                        timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("first bounce: restart host") == 3
    assert result.stdout.count("second bounce: restart host") == 3
    assert "upgrade complete: 3 hosts at metadata version 11, COOPERATIVE" in result.stdout
    assert versions(old_app) == {(11, 11, "COOPERATIVE")}
    assert all(h.alive for h in old_app.hosts.values())


def test_the_old_release_named_as_new_stops_it_after_one_restart(old_app: LocalApplication, tmp_path: Path) -> None:
    old_python = tmp_path / "old" / "bin" / "python"
    old_python.parent.mkdir(parents=True)
    variable, value = next(iter(OLD.environment().items()))
    old_python.write_text(f'#!/bin/sh\nexport {variable}={value}\nexec "{sys.executable}" "$@"\n')
    old_python.chmod(0o755)
    where = ("-a", old_app.application_id, "--state-dir", tmp_path / "driver")
    result = streams_rt("upgrade", "--to", tmp_path / "old", "--from", "2.3", "--latest-version", "11",
                        "--settle-timeout", "5", *where, timeout=300)
    assert_one_error_line(result, "upgrade stopped: check 'member version' failed",
                          "reads metadata version 10, not the new release's 11", "1 of 3 hosts restarted")
    assert result.stdout.count("restart host") == 1
    wait_until_settled(old_app, 3)
    assert versions(old_app) == {(10, 10, "EAGER")}
