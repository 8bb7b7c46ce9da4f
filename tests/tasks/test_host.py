"""Task hosts as OS processes on the real broker and real RocksDB, driven by the batch loop: each
topology's results equal a reference computed in plain Python; crashes (kill -9 at exact steps, or
of a whole host) lose nothing and, under exactly_once_v2, count nothing twice."""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.coordinator.reachability import Reachability, probe_host
from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.batches import BatchError, BatchRequest, HostClient
from streams_rt.rpc.tasks import TaskProgress
from streams_rt.runtime.batch_loop import BatchLoop
from streams_rt.runtime.local import LocalApplication
from streams_rt.tasks import ownership_log
from tests.tasks import topologies

pytestmark = pytest.mark.broker

FAST = {"group.initial.rebalance.delay.ms": 0,
        "heartbeat.interval.ms": 300, "session.timeout.ms": 6000, "commit.interval.ms": 500,
        "max.poll.interval.ms": 30000}


class Apps:
    """Applications made by a test, each with its own application.id and topics; always closed."""

    def __init__(self, broker: BrokerInfo, tmp_path: Path) -> None:
        self.bootstrap = broker.bootstrap_servers
        self.tmp_path = tmp_path
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self.apps: list[tuple[LocalApplication, BatchLoop]] = []
        self.suffix = uuid.uuid4().hex[:8]

    def topic(self, name: str) -> str:
        """Tests share one broker: topic names get this test's suffix."""
        return f"{name}-{self.suffix}"

    def create_topics(self, partitions: dict[str, int]) -> None:
        futures = self.admin.create_topics([NewTopic(self.topic(t), n, 1) for t, n in partitions.items()])
        for future in futures.values():
            future.result()

    def produce(self, topic: str, records: list[tuple[str | None, bytes | None, int]]) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "partitioner": "murmur2_random"})
        for key, value, ts in records:
            producer.produce(self.topic(topic), value, None if key is None else key.encode(), timestamp=ts)
        assert producer.flush(30) == 0
        producer.close()

    def start(self, topology: str, hosts: int = 2, **props: Any) -> tuple[LocalApplication, BatchLoop]:
        properties = {"application.id": f"app-{uuid.uuid4().hex[:10]}", "bootstrap.servers": self.bootstrap,
                      **FAST, **props}
        app = LocalApplication(f"tests.tasks.topologies:{topology}", properties,
                               self.tmp_path / properties["application.id"], hosts=hosts,
                               topology_args={"suffix": f"-{self.suffix}"})
        loop = app.loop(max_records_per_task=props.get("max.records.per.task.per.batch", 500))
        self.apps.append((app, loop))
        app.wait_until_running(loop)
        return app, loop

    def close(self) -> None:
        for app, loop in self.apps:
            loop.close()
            app.close()


@pytest.fixture
def apps(kafka_broker: BrokerInfo, tmp_path: Path) -> Iterator[Apps]:
    made = Apps(kafka_broker, tmp_path)
    yield made
    made.close()


def drain(loop: BatchLoop, timeout_s: float = 120.0) -> list[tuple[Any, Any]]:
    """Run batches until every input is processed; the output rows (key, value), in order."""
    rows: list[tuple[Any, Any]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = loop.run_once()
        rows += output_rows(result.rows())
        if not result.records and not result.refused:
            _, statuses = loop.status()
            if loop.lag(statuses) == 0:
                return rows
            time.sleep(0.05)  # transaction markers on their way: the writes become readable soon
    raise AssertionError(f"inputs not drained within {timeout_s} s")


def output_rows(table: pa.Table | None) -> list[tuple[Any, Any]]:
    if table is None:
        return []
    return list(zip(table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True))


def last_values(rows: list[tuple[Any, Any]]) -> dict[Any, Any]:
    return dict(rows)


LINES = [" ".join(f"w{(i * 7 + j) % 17}" for j in range(i % 5 + 1)) for i in range(600)]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_word_count_through_a_repartition_topic(apps: Apps, guarantee: str) -> None:
    apps.create_topics({"wc-lines": 3, "wc-counts": 3})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    props: dict[str, Any] = {"processing.guarantee": guarantee}
    app, loop = apps.start("word_count", **props)
    rows = drain(loop)
    assert last_values(rows) == topologies.word_count_reference(LINES)
    assert {t.subtopology for t in app.owners(loop)} == {0, 1}


def test_hosts_started_together_are_running_in_one_settled_group_once_waited_for(apps: Apps) -> None:
    """wait_until_running returns only once every host has joined and reported and nothing is being
    revoked: all tasks RUNNING on the first host a moment before the others join is not enough (their
    joins' rebalances would refuse the caller's first batches)."""
    apps.create_topics({"wc-lines": 3, "wc-counts": 3})
    app, loop = apps.start("word_count", hosts=3)
    status = app.coordinator.status()
    assert status["state"] == "STABLE" and len(status["hosts"]) == 3, status["hosts"]
    assert {h["endpoint"] for h in status["hosts"]} == {h.endpoint for h in app.hosts.values()}
    assert not any(h["revoke"] for h in status["hosts"]) and all(t["state"] == "RUNNING" for t in status["tasks"])


def test_windowed_page_views(apps: Apps) -> None:
    apps.create_topics({"pv-views": 2, "pv-counts": 2})
    views = [(f"page-{i % 5}", 1_700_000_000_000 + (i * 7_919) % 400_000) for i in range(800)]
    apps.produce("pv-views", [(page, b"view", ts) for page, ts in views])
    _, loop = apps.start("page_views")
    rows = drain(loop)
    found = {(key["key"], int(key["start"].timestamp() * 1000)): count for key, count in rows}  # the last update wins
    assert found == topologies.page_views_reference(views, 2)


def test_a_moved_task_judges_late_records_by_the_stream_time_it_had(apps: Apps) -> None:
    """Stream time travels with the task (in its batch record): a record late by the old owner's
    stream time is still dropped by the new owner, which would otherwise start from no stream time
    and count it."""
    apps.create_topics({"pv-views": 1, "pv-counts": 1})
    now = 1_700_000_000_000
    apps.produce("pv-views", [("page-0", b"view", now)])
    app, loop = apps.start("page_views", hosts=1)
    assert [(key["key"], count) for key, count in drain(loop)] == [("page-0", 1)]
    app.start_host("host-1")
    assert app.stop_host("host-0") == 0  # the task moves to host-1, restored from its changelogs
    late = now - 2 * 60_000  # its window closed 30 s (the grace) after its end, long before `now`
    apps.produce("pv-views", [("page-0", b"view", late), ("page-1", b"view", now)])
    rows = drain(loop)
    assert [(key["key"], count) for key, count in rows] == [("page-1", 1)]  # the late view dropped


def test_stream_table_join(apps: Apps) -> None:
    apps.create_topics({"eo-customers": 2, "eo-orders": 2, "eo-enriched": 2})
    apps.produce("eo-customers", [(f"c{i}", f"name-{i}".encode(), 1_000) for i in range(20)])
    apps.produce("eo-orders", [(f"c{i % 25}", f"order-{i}".encode(), 2_000 + i) for i in range(100)])
    _, loop = apps.start("enrich_orders")
    rows = drain(loop)
    expected = Counter((f"c{i % 25}", f"order-{i}:name-{i % 25}") for i in range(100) if i % 25 < 20)
    assert Counter(rows) == expected


def test_processor_api_store_and_punctuation(apps: Apps) -> None:
    apps.create_topics({"dd-events": 1, "dd-firsts": 1})
    events = [("a", 0), ("b", 40), ("a", 90), ("c", 150), ("a", 160), ("d", 420), ("e", 430)]
    apps.produce("dd-events", [(k, b"v", 1_000_000 + ts) for k, ts in events])
    _, loop = apps.start("deduplicate", **{"max.records.per.task.per.batch": 3})  # batches of 3: state carries over
    rows = drain(loop)
    assert rows == [("a", "v"), ("distinct", "1"), ("b", "v"), ("c", "v"), ("distinct", "3"), ("d", "v"),
                    ("distinct", "4"), ("e", "v")]


def read_committed(apps: Apps, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": apps.bootstrap, "group.id": "check", "isolation.level": "read_committed",
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    metadata = consumer.list_topics(apps.topic(topic), timeout=10).topics[apps.topic(topic)]
    partitions = list(metadata.partitions)
    consumer.assign([KafkaTopicPartition(apps.topic(topic), p, 0) for p in partitions])
    out: list[tuple[bytes | None, bytes | None]] = []
    done: set[int | None] = set()
    while len(done) < len(partitions):
        message = consumer.poll(10)
        assert message is not None, "output topic read stalled"
        if message.error():
            done.add(message.partition())
            continue
        out.append((message.key(), message.value()))
    consumer.close()
    return out


@pytest.mark.parametrize("point", ["before_commit", "after_commit"])
def test_exactly_once_replay_after_kill_9_equals_a_single_run(apps: Apps, point: str) -> None:
    """kill -9 the host at an exact step of task 1_0's batch (its writes sent; before or after the
    commit); the batch, fixed once planned, is asked for again on the restarted host. Output rows,
    the output topic and the counts equal a run without the crash."""
    apps.create_topics({"wc-lines": 1, "wc-counts": 1})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    settings = {"processing.guarantee": "exactly_once_v2", "max.records.per.task.per.batch": 100_000}
    _, clean_loop = apps.start("word_count", hosts=1, **settings)
    clean_rows = drain(clean_loop)

    app, loop = apps.start("word_count", hosts=1, **settings)
    app.stop_host("host-0")
    app.start_host("host-0", env={"STREAMS_RT_FAULTS": f"{point}:1_0"})
    app.wait_until_running(loop)
    rows = drain_until_dead(loop, app.hosts["host-0"].proc)
    assert app.stop_host("host-0") == -9
    assert loop.pending, "the interrupted batch waits to be asked for again"
    app.start_host("host-0")  # same state directory: restores what was committed
    app.wait_until_running(loop)
    rows += drain(loop)
    assert Counter(rows) == Counter(clean_rows)
    assert last_values(rows) == topologies.word_count_reference(LINES)
    outputs = read_committed(apps, "wc-counts")
    assert len(outputs) == len(clean_rows) * 2  # both runs wrote to the one output topic, once each


def drain_until_dead(loop: BatchLoop, proc: Any, timeout_s: float = 120.0) -> list[tuple[Any, Any]]:
    rows: list[tuple[Any, Any]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows += output_rows(loop.run_once().rows())
        if proc.poll() is not None:
            return rows
        time.sleep(0.05)
    raise AssertionError("the fault point was never reached")


def test_kill_9_of_a_host_fails_over_to_its_standby(apps: Apps) -> None:
    apps.create_topics({"wc-lines": 2, "wc-counts": 2})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    app, loop = apps.start("word_count", hosts=2, **{"processing.guarantee": "exactly_once_v2",
                                                      "num.standby.replicas": 1})
    rows = []
    for _ in range(3):
        rows += output_rows(loop.run_once().rows())
    app.stop_host("host-0", kill=True)
    rows += drain(loop)
    assert last_values(rows) == topologies.word_count_reference(LINES)
    # Everything on the survivor, once the group has dropped the dead host (at once: its held
    # heartbeat's connection dropped, or a reader reported it).
    wait_for(lambda: len(set(app.owners(loop).values())) == 1, 60, "every task on the survivor")


def test_the_ownership_log_shows_one_owner_per_task_through_a_join_a_clean_stop_and_a_kill(
        apps: Apps, tmp_path: Path) -> None:
    """Every host appends to one `task.ownership.log`; across a host joining, one stopping cleanly
    and one killed, it shows no task with two owners, and each event where it happened."""
    audit = tmp_path / "ownership.log"
    apps.create_topics({"wc-lines": 2, "wc-counts": 2})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    app, loop = apps.start("word_count", hosts=2, **{"processing.guarantee": "exactly_once_v2",
                                                      "num.standby.replicas": 1, "task.ownership.log": str(audit),
                                                      "max.records.per.task.per.batch": 50})
    rows = []
    for _ in range(3):
        rows += output_rows(loop.run_once().rows())
    pids = {name: host.proc.pid for name, host in app.hosts.items()}
    pids["host-2"] = app.start_host("host-2").proc.pid
    for _ in range(3):
        rows += output_rows(loop.run_once().rows())
    assert app.stop_host("host-0") == 0
    for _ in range(3):
        rows += output_rows(loop.run_once().rows())
    app.stop_host("host-1", kill=True)
    killed_at = len(ownership_log.read(audit))
    rows += drain(loop)
    assert last_values(rows) == topologies.word_count_reference(LINES)

    events = ownership_log.read(audit)
    assert ownership_log.check(events) == []
    assert {e["pid"] for e in events} == set(pids.values())
    batches = [e for e in events if e["event"] == ownership_log.BATCH]
    assert {str(t) for t in app.owners(loop)} == {str(e["task"]) for e in batches}
    host_0_released = {t for e in events if e["pid"] == pids["host-0"] and e["event"] == ownership_log.REVOKED
                       for t in cast(list[str], e["tasks"])}
    host_0_batches = {e["task"] for e in batches if e["pid"] == pids["host-0"]}
    assert host_0_batches and host_0_batches <= host_0_released  # it gave up cleanly what it ran
    after_kill = [e["pid"] for e in events[killed_at:] if e["event"] == ownership_log.BATCH]
    assert after_kill and set(after_kill) == {pids["host-2"]}  # the survivor took over everything


def member_versions(app: LocalApplication) -> list[tuple[int | None, int | None]]:
    members = app.coordinator.describe()["members"].values()
    return sorted((m["version"], m["latest_supported_version"]) for m in members)


def wait_for(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:.0f} s: {what}")
        time.sleep(0.1)


def test_a_host_bounced_in_place_with_new_code_upgrades_the_group_through_version_probing(
        apps: Apps, tmp_path: Path) -> None:
    """A host standing in for the previous release (metadata version capped at 10) holds the group
    at version 10; restarted in place without the cap (its `restart` action: same pid, new process
    image), it probes, and the whole group moves to this release's version. Records keep flowing,
    none is lost or counted twice, and no task ever has two owners."""
    audit = tmp_path / "ownership.log"
    apps.create_topics({"wc-lines": 2, "wc-counts": 2})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    app, loop = apps.start("word_count", hosts=1, **{"processing.guarantee": "exactly_once_v2",
                                                      "task.ownership.log": str(audit),
                                                      "max.records.per.task.per.batch": 40})
    old = app.start_host("host-1", latest_supported_version=10)
    wait_for(lambda: member_versions(app) == [(10, 10), (10, 11)], 60, "the group on the old release's version")
    rows = []
    for _ in range(3):
        rows += output_rows(loop.run_once().rows())
    pid, endpoint = old.proc.pid, old.endpoint
    app.restart_host("host-1")
    assert old.proc.pid == pid and old.alive and old.endpoint != endpoint
    wait_for(lambda: member_versions(app) == [(11, 11), (11, 11)], 60, "the group on this release's version")
    rows += drain(loop)
    assert last_values(rows) == topologies.word_count_reference(LINES)
    assert ownership_log.check(ownership_log.read(audit)) == []
    assert "restarting as asked" in old.log_tail(20_000)


def test_a_restart_with_settings_that_would_not_start_is_refused_and_the_host_goes_on(apps: Apps) -> None:
    apps.create_topics({"nb-in": 1, "nb-out": 1})
    apps.produce("nb-in", [(f"k{i}", i.to_bytes(8, "big"), 1_000 + i) for i in range(5)])
    app, loop = apps.start("numbers", hosts=1)
    host = app.hosts["host-0"]
    with HostClient(str(host.endpoint), secret=app.coordinator.secret) as client:
        with pytest.raises(BatchError, match="restart refused: the new properties do not resolve") as refused:
            client.restart({"properties": {"num.standby.replicas": -1}})
        assert refused.value.code == "INVALID" and not refused.value.retriable
    assert drain(loop) == [(f"k{i}", i * 2) for i in range(5)]
    assert host.alive


def test_deserialization_errors_fail_or_are_skipped_by_the_handler(apps: Apps) -> None:
    apps.create_topics({"nb-in": 1, "nb-out": 1})
    good: list[tuple[str | None, bytes | None, int]] = [(f"k{i}", i.to_bytes(8, "big"), 1_000 + i) for i in range(5)]
    apps.produce("nb-in", good[:2] + [("bad", b"not-a-long", 1_002)] + good[2:])
    _, loop = apps.start("numbers", hosts=1)
    with pytest.raises(BatchError) as failure:
        drain(loop)
    assert failure.value.code == "FAILED" and not failure.value.retriable
    assert failure.value.detail == {"topic": apps.topic("nb-in"), "partition": 0, "offset": 2}
    _, loop = apps.start("numbers", hosts=1, **{"deserialization.exception.handler": "log_and_continue"})
    assert drain(loop) == [(f"k{i}", i * 2) for i in range(5)]


def test_stale_and_foreign_batch_calls_are_refused_and_a_batch_further_on_runs_from_the_task(apps: Apps) -> None:
    """Refusals are typed; a batch that starts further on than the task (it sat out a micro-batch
    while it moved) runs from the task's position, and is then replayed by its number and ends."""
    apps.create_topics({"nb-in": 2, "nb-out": 2})
    apps.produce("nb-in", [(f"k{i}", i.to_bytes(8, "big"), 1_000 + i) for i in range(20)])
    app, loop = apps.start("numbers", hosts=2)
    generation, statuses = loop.status()
    task = TaskId(0, 0)
    owner = statuses[task]
    other = next(h.endpoint for h in app.hosts.values() if h.endpoint != owner.endpoint)
    tp = TopicPartition(apps.topic("nb-in"), 0)
    start = owner.positions[tp]
    with HostClient(str(owner.endpoint)) as stranger:  # without the application's secret
        with pytest.raises(BatchError, match="UNAUTHENTICATED"):
            stranger.run_batch(BatchRequest(task, generation, {TopicPartition(apps.topic("nb-in"), 0): (0, 1)}))
    secret = app.coordinator.secret
    with HostClient(str(other), secret=secret) as foreign, HostClient(str(owner.endpoint), secret=secret) as client:
        with pytest.raises(BatchError, match="NOT_OWNER") as refused:
            foreign.run_batch(BatchRequest(task, generation, {tp: (start, start + 1)}))
        assert refused.value.retriable
        with pytest.raises(BatchError, match="WRONG_PARTITIONS") as wrong:
            client.run_batch(BatchRequest(task, generation, {TopicPartition("elsewhere", 0): (0, 1)}))
        assert not wrong.value.retriable
        assert generation >= 1
        table = client.run_batch(BatchRequest(task, generation - 1, {tp: (start, start + 1)}))  # an older plan
        assert isinstance(table, pa.Table) and table.num_rows == 1
        assert client.run_batch(BatchRequest(task, generation, {tp: (start, start + 1)})).equals(table)  # a replay
        with pytest.raises(BatchError, match="OUT_OF_ORDER"):  # starts before the task's position
            client.run_batch(BatchRequest(task, generation, {tp: (start, start + 2)}, 5))
        ahead = client.run_batch(BatchRequest(task, generation, {tp: (start + 2, start + 3)}, 5))
        assert ahead.num_rows == 2  # start + 1 (sat out) and start + 2
        assert client.progress()[task] == TaskProgress({tp: start + 3}, 5)
        assert client.run_batch(BatchRequest(task, generation, {tp: (start + 3, start + 3)}, 5)).equals(ahead)
        assert client.run_batch(BatchRequest(task, generation, {tp: (start + 3, start + 3)}, 6)).num_rows == 0
        assert client.progress()[task] == TaskProgress({tp: start + 3}, 5)  # nothing to do: nothing recorded


def test_hosts_serve_batches_over_tls_when_it_is_switched_on(apps: Apps, tmp_path: Path) -> None:
    """rpc.ssl.enabled: the coordinator and every host's batch endpoint speak TLS only; the batch
    loop, trusting the certificate, runs batches; a client that does not trust it gets nowhere."""
    from tests.rpc.certificates import self_signed

    certificate, key = self_signed(tmp_path)
    apps.create_topics({"nb-in": 1, "nb-out": 1})
    apps.produce("nb-in", [(f"k{i}", i.to_bytes(8, "big"), 1_000 + i) for i in range(10)])
    tls = {"rpc.ssl.enabled": "true", "rpc.ssl.certificate.chain.location": str(certificate),
           "rpc.ssl.private.key.location": str(key), "rpc.ssl.truststore.location": str(certificate)}
    app, loop = apps.start("numbers", hosts=1, **tls)
    assert app.coordinator.address.startswith("grpc+tls://")
    assert all(str(h.endpoint).startswith("grpc+tls://") for h in app.hosts.values())
    assert drain(loop) == [(f"k{i}", i * 2) for i in range(10)]
    _, statuses = loop.status()
    endpoint = str(next(iter(statuses.values())).endpoint)
    with HostClient(endpoint, secret=app.coordinator.secret, timeout_s=5) as untrusting:
        with pytest.raises(BatchError, match="UNREACHABLE"):
            untrusting.status()
    # Something listens there: a coordinator's probe that cannot verify the host does not count it dead.
    assert probe_host(endpoint, secret=app.coordinator.secret, tls_root_certs=None) is Reachability.NO_ANSWER
    assert probe_host(endpoint, secret=app.coordinator.secret,
                      tls_root_certs=certificate.read_bytes()) is Reachability.ANSWERS


def word_count_whose_close_hangs(apps: Apps, tasks: str, close_timeout_s: float
                                 ) -> tuple[LocalApplication, BatchLoop, list[tuple[Any, Any]]]:
    """word_count on one host whose close of `tasks` (a task id or *) hangs for good (a fault
    point), after one batch: the application, its loop and that batch's output rows."""
    apps.create_topics({"wc-lines": 1, "wc-counts": 1})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    app, loop = apps.start("word_count", hosts=1, **{"max.records.per.task.per.batch": 200})
    app.stop_host("host-0")
    app.start_host("host-0", env={"STREAMS_RT_FAULTS": f"stall_on_close:{tasks}"}, close_timeout_s=close_timeout_s)
    app.wait_until_running(loop)
    return app, loop, output_rows(loop.run_once().rows())


def test_a_host_whose_close_hangs_exits_after_its_close_timeout_and_loses_nothing(apps: Apps) -> None:
    """A task whose close never returns (a stuck disk or broker call) must not keep its host, and the
    executor's state locks, for good: past `close_timeout_s` the host logs every thread's stack and
    exits. Its tasks were not checkpointed; the restarted host restores them and the counts are
    still right."""
    app, loop, rows = word_count_whose_close_hangs(apps, "1_0", close_timeout_s=3)
    host = app.hosts["host-0"]
    started = time.monotonic()
    assert app.stop_host("host-0", timeout_s=30) == 1  # faulthandler's exit
    assert time.monotonic() - started < 30
    log = host.log_tail(20_000)
    assert "stall_on_close of task 1_0 hangs for good" in log
    assert "Timeout (0:00:03)!" in log and "in close" in log, log  # the stacks say where it hung
    app.start_host("host-0")
    app.wait_until_running(loop)
    rows += drain(loop)
    assert last_values(rows) == topologies.word_count_reference(LINES)


def test_a_batch_asked_of_a_task_being_given_up_is_refused_at_once_not_after_its_close(apps: Apps) -> None:
    """A revoked task's close waits for the batch in flight, then commits and closes (which takes a
    while: the store, the producer, the consumer). A batch asked for meanwhile is refused at once
    (NOT_OWNER: the Spark source's read then sits the micro-batch out) rather than wait the close
    out with every other task's output behind it. Here the close hangs for good (a fault point),
    so a request that waited would never be answered."""
    app, loop, _ = word_count_whose_close_hangs(apps, "*", close_timeout_s=600)
    generation, statuses = loop.status()
    host = app.hosts["host-0"]
    app.start_host("host-1")  # the rebalance gives one of host-0's two tasks to host-1
    deadline = time.monotonic() + 60
    while not (stalled := re.search(r"stall_on_close of task (\d+_\d+) hangs for good", host.log_tail(50_000))):
        assert time.monotonic() < deadline, "host-0 gave up no task"
        time.sleep(0.05)
    closing = TaskId.parse(stalled.group(1))
    at = {tp: (p, p) for tp, p in statuses[closing].positions.items()}
    with HostClient(str(host.endpoint), secret=app.coordinator.secret, timeout_s=60) as client:
        with pytest.raises(BatchError, match="NOT_OWNER") as refused:
            client.run_batch(BatchRequest(closing, generation, at))
    assert "being closed here" in str(refused.value)
    app.stop_host("host-0", kill=True)


def test_a_failed_state_thread_stops_the_host_with_one_traceback_and_a_clean_close(apps: Apps) -> None:
    """The state thread fails (a fault point, as a restore that cannot go on would): the host logs
    that failure once, gives its tasks up without a second traceback (nothing can commit them on the
    dead thread: one line says so) and exits with code 2. Restarted, it restores and counts right."""
    apps.create_topics({"wc-lines": 1, "wc-counts": 1})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    app, loop = apps.start("word_count", hosts=1)
    app.stop_host("host-0")
    app.start_host("host-0", env={"STREAMS_RT_FAULTS": "fail_state_thread:1_0"})
    host = app.hosts["host-0"]
    assert host.proc.wait(60) == 2
    log = host.log_tail(50_000)
    assert log.count("Traceback") == 1 and "state thread failed" in log, log
    assert "InjectedFault: fault injection: fail_state_thread at task 1_0" in log, log
    assert "given up without a commit" in log and "closing without checkpointing the stores" in log, log
    assert "stopped (exit code 2)" in log, log
    app.hosts.pop("host-0")
    app.start_host("host-0")
    app.wait_until_running(loop)
    assert last_values(drain(loop)) == topologies.word_count_reference(LINES)


def test_a_host_with_another_runs_secret_stops_with_one_line_and_the_group_goes_on(apps: Apps) -> None:
    """A host started with the wrong secret (another run's, say) cannot join: it stops with exit code
    2 and one error line saying why, and the application's own host keeps every task."""
    apps.create_topics({"wc-lines": 2, "wc-counts": 2})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    app, loop = apps.start("word_count", hosts=1)
    intruder = app.start_host("intruder", env=SharedSecret.generate().environment())
    assert intruder.proc.wait(60) == 2
    errors = [line for line in intruder.log_tail(20_000).splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "secret" in errors[0], errors
    rows = drain(loop)
    assert last_values(rows) == topologies.word_count_reference(LINES)
    owners = set(app.owners(loop).values())
    assert len(owners) == 1 and None not in owners  # host-0 alone, every task owned
