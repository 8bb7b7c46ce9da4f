"""`streams-rt dev-broker start --brokers 3`: a KRaft cluster of three combined broker+controller
nodes, started, described, stopped from the command line as a user would, and a node killed and
started again in its place (the same ports, the same quorum)."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.dev_cluster import DevCluster
from tests.kafka.helpers import alive, cli, round_trip

pytestmark = pytest.mark.broker


def test_a_three_broker_cluster_from_the_command_line(tmp_path: Path) -> None:
    directory = tmp_path / "cluster"
    try:
        started = cli("start", "--dir", directory, "--brokers", "3", timeout=240)
        assert started.returncode == 0, started.stderr
        found = re.search(r"Kafka cluster of 3 brokers running at (\S+) \(", started.stdout)
        assert found, started.stdout
        bootstrap = found.group(1)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        assert sorted(n.id for n in admin.describe_cluster().result(timeout=30).nodes) == [1, 2, 3]
        admin.create_topics([NewTopic("three-replicas", 1, 3)])["three-replicas"].result(timeout=30)
        assert len(round_trip(bootstrap, "three-replicas", 10)) == 10
        cluster = DevCluster(directory, 3)
        controller = cluster.controller()
        assert controller is not None and controller[0] in (1, 2, 3)
        # A node killed: status says so; started again, it takes its place.
        victim = cluster.node(2).status()
        assert victim is not None
        os.kill(victim.pid, signal.SIGKILL)
        while alive(victim.pid):
            pass
        status = cli("status", "--dir", directory)
        assert status.returncode == 0 and "1 node(s) down" in status.stdout, status.stdout
        again = cli("start", "--dir", directory, timeout=240)  # the cluster's count is kept
        assert again.returncode == 0 and bootstrap in again.stdout, again.stdout
    finally:
        stopped = cli("stop", "--dir", directory, timeout=180)
    assert stopped.returncode == 0 and stopped.stdout.strip() == "Kafka cluster stopped", stopped.stdout
    assert cli("status", "--dir", directory).returncode == 1
