"""A topology as a streaming DataFrame in local[2], end to end on the real broker: results equal a
plain Python reference; a host killed mid-stream fails over to its standby without failing the
query; an added host takes some tasks while the others keep advancing; a driver restart from the
checkpoint location counts nothing twice; a bad configuration is one clear error."""

from __future__ import annotations

import collections
import itertools
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from streams_rt import StreamsRuntime
from streams_rt.config import ConfigError
from streams_rt.kafka.dev_broker import BrokerInfo

pytestmark = pytest.mark.broker

FAST = {"heartbeat.interval.ms": 300, "session.timeout.ms": 6000, "commit.interval.ms": 500}


def lines(start: int, count: int) -> list[str]:
    return [" ".join(f"w{(i * 7 + j) % 13}" for j in range(i % 4 + 1)) for i in range(start, start + count)]


class Topics:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        suffix = uuid.uuid4().hex[:8]
        self.lines, self.counts = f"lines-{suffix}", f"counts-{suffix}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(self.lines, 4, 1), NewTopic(self.counts, 4, 1)]).values():
            future.result()

    def produce(self, texts: list[str], offset: int = 0) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap})
        for i, text in enumerate(texts, offset):
            producer.produce(self.lines, text.encode(), f"line-{i}".encode())
        assert producer.flush(30) == 0

    def runtime(self, spark: SparkSession, work: Path, app: str, **props: Any) -> StreamsRuntime:
        config = {"application.id": app, "bootstrap.servers": self.bootstrap, **FAST, **props}
        return StreamsRuntime(spark, "examples.word_count:topology", config,
                              topology_args={"lines": self.lines, "counts": self.counts}, work_dir=work)


@pytest.fixture
def topics(kafka_broker: BrokerInfo) -> Topics:
    return Topics(kafka_broker.bootstrap_servers)


@pytest.fixture
def runtimes() -> Iterator[list[StreamsRuntime]]:
    made: list[StreamsRuntime] = []
    yield made
    for runtime in made:
        runtime.stop()


def counts(spark: SparkSession, table: str) -> dict[str, int]:
    """The latest count per word the query has written (counts only grow)."""
    found: dict[str, int] = {}
    for row in spark.sql(f"SELECT key, value FROM {table}").collect():
        found[row.key] = max(found.get(row.key, 0), row.value)
    return found


def wait_for(spark: SparkSession, query: StreamingQuery, table: str, expected: dict[str, int],
             timeout_s: float = 120.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert query.exception() is None, query.exception()
        found = counts(spark, table)
        if found == expected:
            return found
        time.sleep(0.5)
    raise AssertionError(f"counts not reached within {timeout_s} s: {counts(spark, table)} != {expected}")


def reference(texts: list[str]) -> dict[str, int]:
    return dict(collections.Counter(w for text in texts for w in text.split()))


def test_word_count_in_local_mode_equals_the_reference(spark: SparkSession, topics: Topics, tmp_path: Path,
                                                        runtimes: list[StreamsRuntime]) -> None:
    texts = lines(0, 400)
    topics.produce(texts)
    runtime = topics.runtime(spark, tmp_path, f"wc-{uuid.uuid4().hex[:8]}")
    runtimes.append(runtime)
    table = f"wc_{uuid.uuid4().hex[:8]}"
    query = runtime.stream().writeStream.format("memory").queryName(table).start()
    try:
        wait_for(spark, query, table, reference(texts))
        more = lines(400, 200)
        topics.produce(more, 400)
        wait_for(spark, query, table, reference(texts + more))
        schema = spark.sql(f"SELECT * FROM {table}").schema.simpleString()
        assert schema == "struct<topic:string,key:string,value:bigint,timestamp:timestamp,task:string>"
    finally:
        query.stop()


def test_a_bad_configuration_is_one_clear_error(spark: SparkSession, topics: Topics, tmp_path: Path) -> None:
    cases = {
        "num.standby.replica": "unknown configuration key 'num.standby.replica'; did you mean 'num.standby.replicas'?",
        "num.standby.replicas": "num.standby.replicas",
        "upgrade.from": "upgrade.from",
    }
    values = {"num.standby.replica": 1, "num.standby.replicas": -1, "upgrade.from": "9.9"}
    for key, expected in cases.items():
        with pytest.raises(ValueError) as error:
            topics.runtime(spark, tmp_path, "bad", **{key: values[key]})
        message = str(error.value)
        assert expected in message and "\n" not in message and "Traceback" not in message
    with pytest.raises(ConfigError, match="application.id"):
        StreamsRuntime(spark, "examples.word_count:topology", {"bootstrap.servers": topics.bootstrap})


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_a_driver_restart_from_the_checkpoint_counts_nothing_twice(
    spark: SparkSession, topics: Topics, tmp_path: Path, runtimes: list[StreamsRuntime], guarantee: str
) -> None:
    """The query writes Parquet (a sink that recovers from its checkpoint); the driver goes away
    (query, coordinator and hosts), more input arrives, and a new driver resumes from the checkpoint
    with state restored from the changelogs: the counts continue and never overshoot."""
    app = f"restart-{uuid.uuid4().hex[:8]}"
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "output"
    first, second = lines(0, 300), lines(300, 300)
    topics.produce(first)
    for run, expected in ((1, reference(first)), (2, reference(first + second))):
        runtime = topics.runtime(spark, tmp_path / f"run-{run}", app, **{"processing.guarantee": guarantee})
        query = (runtime.stream().writeStream.format("parquet").option("path", str(output))
                 .option("checkpointLocation", str(checkpoint)).trigger(processingTime="200 milliseconds").start())
        try:
            if run == 2:
                topics.produce(second, 300)
            deadline = time.monotonic() + 120
            while (found := parquet_counts(spark, output)) != expected and time.monotonic() < deadline:
                assert query.exception() is None, query.exception()
                assert all(found.get(w, 0) <= c for w, c in expected.items()), f"overshot: {found}"
                time.sleep(0.5)
            assert found == expected
        finally:
            query.stop()
            runtime.stop()  # the driver goes away: its coordinator and hosts with it


def parquet_counts(spark: SparkSession, path: Path) -> dict[str, int]:
    if not any(path.glob("*.parquet")):
        return {}
    found: dict[str, int] = {}
    schema = "topic STRING, key STRING, value BIGINT, timestamp TIMESTAMP, task STRING"
    for row in spark.read.schema(schema).parquet(str(path)).select("key", "value").collect():
        found[row.key] = max(found.get(row.key, 0), row.value)
    return found


def test_a_killed_host_fails_over_to_its_standby_and_the_query_goes_on(
    spark: SparkSession, topics: Topics, tmp_path: Path, runtimes: list[StreamsRuntime]
) -> None:
    texts = lines(0, 300)
    topics.produce(texts)
    runtime = topics.runtime(spark, tmp_path, f"kill-{uuid.uuid4().hex[:8]}",
                             **{"num.standby.replicas": 1, "max.records.per.task.per.batch": 50})
    runtimes.append(runtime)
    table = f"k_{uuid.uuid4().hex[:8]}"
    query = runtime.stream().writeStream.format("memory").queryName(table).start()
    try:
        deadline = time.monotonic() + 60
        while not spark.sql(f"SELECT * FROM {table}").count() and time.monotonic() < deadline:
            time.sleep(0.2)
        runtime.app.stop_host("host-0", kill=True)
        more = lines(300, 300)
        topics.produce(more, 300)
        wait_for(spark, query, table, reference(texts + more))
        assert query.exception() is None
    finally:
        query.stop()


def test_an_added_host_takes_some_tasks_and_the_others_keep_advancing(
    spark: SparkSession, topics: Topics, tmp_path: Path, runtimes: list[StreamsRuntime]
) -> None:
    """A second host joins mid-stream: some tasks move to it; every source task that stays put
    advances in every round of input while the others move (its committed position, as its host
    reports it, grows between consecutive rounds)."""
    runtime = topics.runtime(spark, tmp_path, f"scale-{uuid.uuid4().hex[:8]}",
                             **{"num.standby.replicas": 1, "local.task.hosts": 1})
    runtimes.append(runtime)
    table = f"s_{uuid.uuid4().hex[:8]}"
    query = (runtime.stream().writeStream.format("memory").queryName(table)
             .trigger(processingTime="200 milliseconds").start())
    loop = runtime.app.loop()
    try:
        produced = lines(0, 100)
        topics.produce(produced)
        wait_for(spark, query, table, reference(produced))
        before = runtime.app.owners(loop)
        runtime.app.start_host("host-1")
        samples: list[dict[Any, tuple[str | None, int]]] = []
        for i in range(1, 13):
            batch = lines(i * 100, 100)
            topics.produce(batch, i * 100)
            produced += batch
            seen = query.lastProgress["batchId"] if query.lastProgress else -1
            while not query.lastProgress or query.lastProgress["batchId"] < seen + 2:
                time.sleep(0.05)  # two micro-batches after the input: a running task has read it
            time.sleep(0.6)  # and its host has reported the new position
            _, statuses = loop.status()
            samples.append({t: (s.owner, sum(s.positions.values())) for t, s in statuses.items() if t.subtopology == 0})
        wait_for(spark, query, table, reference(produced))
        after = runtime.app.owners(loop)
        moved = {t for t in before if before[t] != after[t]}
        assert moved and len(moved) < len(before), f"some tasks move, not all: {moved}"
        stayed = [t for t in samples[0] if t not in moved]
        assert stayed
        for earlier, later in itertools.pairwise(samples):
            for task in stayed:
                assert later[task][1] > earlier[task][1], f"task {task} held back: {earlier[task]} -> {later[task]}"
        assert query.exception() is None
    finally:
        loop.close()
        query.stop()
