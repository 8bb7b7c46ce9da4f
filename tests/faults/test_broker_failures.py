"""Broker failures on a three-broker KRaft cluster (`DevCluster`, as `streams-rt dev-broker start
--brokers 3` makes it), after Kafka's streams broker-bounce and replica-failure system tests: with
`replication.factor=3`, every internal topic has three replicas and `min.insync.replicas` 2; then,
under exactly_once_v2 with input flowing, the leader of changelog and input partitions is killed
with kill -9, a broker is bounced cleanly, and the active controller is killed. Each fault is one
row of the suite's summary: the verifier reads lost=0 duplicated=0 and the ownership audit is clean.
The cluster is this module's own (the session's single broker is shared)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from streams_rt.kafka.dev_cluster import DevCluster
from streams_rt.runtime.topics import changelog_topics
from tests.faults.harness import FaultRun, SummaryRow
from tests.faults.smoke_topology import INPUT

pytestmark = [pytest.mark.broker, pytest.mark.faults]
OUTAGE_S = 6.0
EXACTLY_ONCE = "exactly_once_v2"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    made = DevCluster(tmp_path_factory.mktemp("three-brokers"), brokers=3)
    made.start(owned=True)
    yield made
    made.stop()


def fault_run(cluster: DevCluster, tmp_path: Path, duration_s: float = 30.0) -> FaultRun:
    info = cluster.status()
    assert info is not None and len(info.nodes) == 3
    replicated: dict[str, Any] = {"replication.factor": 3}
    run = FaultRun(info.bootstrap_servers, tmp_path / "run", EXACTLY_ONCE, duration_s=duration_s, **replicated)
    run.settle(hosts=3)
    return run


def internal_topics(run: FaultRun) -> list[str]:
    app = run.app
    return [*changelog_topics(app.topology, app.layout), *app.layout.repartition_topics]


def leaders(run: FaultRun, topics: list[str]) -> dict[tuple[str, int], int]:
    metadata = AdminClient({"bootstrap.servers": run.bootstrap}).list_topics(timeout=10).topics
    return {(t, p): part.leader for t in topics for p, part in metadata[t].partitions.items()}


def kill_node(run: FaultRun, cluster: DevCluster, node: int, hard: bool) -> None:
    """Stop node `node` (kill -9, or SIGTERM), keep the batch loop calling through the outage, start
    it again on its ports and data; every task's next output ends its recovery."""
    broker = cluster.node(node)
    info = broker.status()
    assert info is not None
    run.fault(run.loop.status()[1])
    if hard:
        os.kill(info.pid, signal.SIGKILL)
        while Path(f"/proc/{info.pid}").exists() and "Z" not in _state(info.pid):
            time.sleep(0.05)
    else:
        assert broker.stop()
    run.run_for(OUTAGE_S)
    assert broker.start(owned=True).port == info.port
    run.settle(hosts=3)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1]
    except (FileNotFoundError, IndexError):
        return "Z"


def finish(run: FaultRun, fault: str, summary: list[SummaryRow]) -> None:
    verdict = run.finish(fault, summary)
    assert verdict.passed, verdict.problems
    assert verdict.lost == 0 and verdict.duplicated == 0


def test_every_internal_topic_has_three_replicas_and_min_insync_two(cluster: DevCluster, tmp_path: Path,
                                                                      summary: list[SummaryRow]) -> None:
    run = fault_run(cluster, tmp_path, duration_s=10.0)
    try:
        topics = internal_topics(run)
        admin = AdminClient({"bootstrap.servers": run.bootstrap})
        metadata = admin.list_topics(timeout=10).topics
        assert topics and {len(p.replicas) for t in topics for p in metadata[t].partitions.values()} == {3}
        described = admin.describe_configs([ConfigResource("topic", t) for t in topics])
        assert {t.name: future.result()["min.insync.replicas"].value for t, future in described.items()} == \
            {t: "2" for t in topics}
        finish(run, "three brokers: no fault", summary)
    finally:
        run.close()


def test_the_leader_of_changelog_and_input_partitions_killed(cluster: DevCluster, tmp_path: Path,
                                                              summary: list[SummaryRow]) -> None:
    run = fault_run(cluster, tmp_path)
    try:
        run.run_for(2)
        led = leaders(run, [*internal_topics(run), f"{INPUT}{run.suffix}"])
        changelog_leaders = {n for (t, _), n in led.items() if t.endswith("-changelog")}
        input_leaders = {n for (t, _), n in led.items() if t.startswith(INPUT)}
        victim = max(changelog_leaders & input_leaders or changelog_leaders,
                     key=lambda n: sum(1 for leader in led.values() if leader == n))
        kill_node(run, cluster, victim, hard=True)
        finish(run, f"leader broker killed (kill -9, node {victim})", summary)
    finally:
        run.close()


def test_a_broker_bounced(cluster: DevCluster, tmp_path: Path, summary: list[SummaryRow]) -> None:
    run = fault_run(cluster, tmp_path)
    try:
        run.run_for(2)
        kill_node(run, cluster, 2, hard=False)
        finish(run, "one of three brokers bounced (clean)", summary)
    finally:
        run.close()


def test_the_active_controller_killed(cluster: DevCluster, tmp_path: Path, summary: list[SummaryRow]) -> None:
    run = fault_run(cluster, tmp_path)
    try:
        run.run_for(2)
        found = cluster.controller()
        assert found is not None
        controller, epoch = found
        kill_node(run, cluster, controller, hard=True)
        after = cluster.controller()
        assert after is not None and after[1] > epoch, "a new controller was elected"
        finish(run, f"active controller killed (kill -9, node {controller})", summary)
    finally:
        run.close()
