"""Interactive queries under real Spark (local[2], the real broker, real host processes): an answer's
`committed_batch` is Spark's own batch id (as foreachBatch is told it), `at_batch` answers from that
micro-batch's cut, and both survive a driver restart from the checkpoint: the restored state answers
with its old batch ids and the restarted query's batches take new ones."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from streams_rt import StreamsRuntime
from streams_rt.iq import Client, QueryError
from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.rpc.http_auth import bearer_headers
from tests.spark.test_streams_runtime import Topics, lines, reference

pytestmark = pytest.mark.broker

STORE = "word-counts"
LAST = 2**62
COUNT_TASKS = {f"1_{p}" for p in range(4)}  # the store's tasks: subtopology 1 (after the repartition), 4 partitions


class Sink:
    """foreachBatch: each micro-batch's id, the tasks that wrote output in it and the counts written."""

    def __init__(self) -> None:
        self.batches: dict[int, tuple[set[str], dict[str, int]]] = {}
        self._lock = threading.Lock()

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        rows = frame.select("key", "value", "task").collect()
        with self._lock:
            self.batches[batch_id] = ({r.task for r in rows}, {r.key: r.value for r in rows})

    def last_batch_of(self) -> dict[str, int]:
        """Each store task's last batch with output (a task with input always writes counts)."""
        with self._lock:
            return {task: max(b for b, (tasks, _) in self.batches.items() if task in tasks)
                    for task in COUNT_TASKS if any(task in tasks for tasks, _ in self.batches.values())}

    def counts_through(self, batch: int) -> dict[str, int]:
        found: dict[str, int] = {}
        with self._lock:
            for b in sorted(self.batches):
                if b <= batch:
                    found.update(self.batches[b][1])
        return found


def start_query(runtime: StreamsRuntime, sink: Sink, checkpoint: Path) -> StreamingQuery:
    return (runtime.stream().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds").start())


def wait_until(what: str, done: Callable[[], bool], query: StreamingQuery | None = None,
               timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert query is None or query.exception() is None, query.exception()
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        time.sleep(0.3)


def committed_batches(runtime: StreamsRuntime) -> dict[str, int | None]:
    """Each store task's committed batch, as its active host's answers give it (an empty page)."""
    found: dict[str, int | None] = {}
    for host in runtime.app.hosts.values():
        answer = httpx.get(f"http://{host.query_endpoint}/v1/stores/{STORE}/all", params={"limit": 1},
                           headers=bearer_headers(runtime.app.coordinator.secret))
        if answer.status_code == 200:
            found.update({f["task"]: f["committed_batch"] for f in answer.json()["freshness"]})
    return found


def test_answers_carry_sparks_batch_ids_and_at_batch_answers_from_that_cut_across_a_driver_restart(
    spark: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path
) -> None:
    """Each run's input is written before its query starts: the run's first micro-batch reads all the
    lines, the next all the words they were repartitioned into, so every store task takes part in
    that one, which makes it a cut of the whole store. The second run is a new driver (coordinator,
    hosts, state restored from the changelogs) on the first one's checkpoint."""
    topics = Topics(kafka_broker.bootstrap_servers)
    app, checkpoint = f"iq-spark-{uuid.uuid4().hex[:8]}", tmp_path / "checkpoint"
    first, second = lines(0, 300), lines(300, 300)
    topics.produce(first)
    cut = one_run(spark, topics.runtime(spark, tmp_path / "run-0", app), checkpoint, reference(first), None)
    topics.produce(second, 300)
    one_run(spark, topics.runtime(spark, tmp_path / "run-1", app), checkpoint, reference(first + second), cut)


def one_run(spark: SparkSession, runtime: StreamsRuntime, checkpoint: Path, expected: dict[str, int],
            earlier_cut: int | None) -> int:
    """Run the query until it has counted `expected` and is idle; check the answers' batches against
    Spark's; return the run's last batch (a cut)."""
    sink = Sink()
    try:
        if earlier_cut is not None:  # restored state answers with the batch it was committed at
            answers: dict[str, int | None] = {}

            def every_task_answers() -> bool:  # one look at all hosts: tasks may still move between two
                answers.clear()
                answers.update(committed_batches(runtime))
                return set(answers) == COUNT_TASKS

            wait_until("the restored hosts answer for every task", every_task_answers)
            assert answers == {task: earlier_cut for task in COUNT_TASKS}
        query = start_query(runtime, sink, checkpoint)
        try:
            wait_until(f"the counts of {len(expected)} words", lambda: sink.counts_through(LAST) == expected, query)
            wait_until("the query idle", lambda: query.status["message"] == "Waiting for data to arrive", query)
            # the batches Spark ran (an idle trigger's progress names the next batch, which has not run)
            last = max(p["batchId"] for p in query.recentProgress if "addBatch" in p["durationMs"])
        finally:
            query.stop()
        spark_batches = sorted(sink.batches)
        print(f"Spark's batches {spark_batches}, last batch in its progress {last}; store tasks' last batches with "
              f"output {sink.last_batch_of()}; answers' committed batches {committed_batches(runtime)}")
        assert spark_batches[-1] == last
        if earlier_cut is not None:
            assert spark_batches[0] > earlier_cut, f"batch ids reused after the restart: {spark_batches}"
        # the batch each task's answers carry is the Spark batch in which it last wrote output
        assert committed_batches(runtime) == sink.last_batch_of()
        cut = max(sink.last_batch_of().values())
        assert set(sink.last_batch_of().values()) == {cut}, "every store task took part in the last batch"
        url = f"http://{next(iter(runtime.app.hosts.values())).query_endpoint}"
        with Client(url, secret=runtime.app.coordinator.secret) as client:
            assert dict(client.all(STORE, at_batch=cut)) == sink.counts_through(cut) == expected
            word = next(iter(expected))
            answer = client.get(STORE, word, at_batch=cut)
            assert (answer.value, answer.freshness["committed_batch"]) == (expected[word], cut)
            if earlier_cut is not None:
                with pytest.raises(QueryError) as passed:
                    client.get(STORE, word, at_batch=earlier_cut)
                assert (passed.value.status, passed.value.code) == (409, "BATCH_PASSED")
            with pytest.raises(QueryError) as ahead:
                list(client.all(STORE, at_batch=cut + 1))
            assert (ahead.value.status, ahead.value.code) == (503, "BATCH_NOT_YET_COMMITTED")
        return cut
    finally:
        runtime.stop()  # the driver goes away: its coordinator and hosts with it
