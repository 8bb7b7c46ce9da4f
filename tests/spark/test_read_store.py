"""`StreamsRuntime.read_store`: a live store as a batch DataFrame in real Spark (local[2]) over real host
processes and the real broker: one Spark partition per task, the counts equal the reference, each
row's task is its key's (murmur2) and its batch the Spark batch the task's state was committed at;
`at_batch` reads that one cut, a batch the state has moved past fails the read saying so, and a
store the topology does not have is one clear error before Spark runs anything."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.partitioner import partition_for
from streams_rt.spark.runtime import UnknownStore
from tests.spark.test_query_batches import COUNT_TASKS, LAST, STORE, Sink, start_query, wait_until
from tests.spark.test_streams_runtime import Topics, lines, reference

pytestmark = pytest.mark.broker


def test_read_store_gives_the_live_counts_one_partition_per_task_and_one_cut_at_a_batch(
    spark: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path
) -> None:
    topics = Topics(kafka_broker.bootstrap_servers)
    texts = lines(0, 400)
    topics.produce(texts)
    expected = reference(texts)
    runtime = topics.runtime(spark, tmp_path / "work", f"read-store-{uuid.uuid4().hex[:8]}")
    sink = Sink()
    try:
        query = start_query(runtime, sink, tmp_path / "checkpoint")
        try:
            wait_until(f"the counts of {len(expected)} words", lambda: sink.counts_through(LAST) == expected, query)
            wait_until("the query idle", lambda: query.status["message"] == "Waiting for data to arrive", query)
        finally:
            query.stop()
        last_batches = sink.last_batch_of()
        assert set(last_batches) == COUNT_TASKS

        frame = runtime.read_store(STORE)
        assert frame.schema.simpleString() == "struct<key:string,value:bigint,task:string,batch:bigint>"
        assert frame.rdd.getNumPartitions() == len(COUNT_TASKS)
        rows = frame.collect()
        print(f"read_store({STORE!r}): {len(rows)} rows over {frame.rdd.getNumPartitions()} partitions; "
              f"batch per task {sorted({(r.task, r.batch) for r in rows})}")
        assert {r.key: r.value for r in rows} == expected and len(rows) == len(expected)
        for row in rows:
            assert row.task == f"1_{partition_for(row.key.encode(), 4)}"
            assert row.batch == last_batches[row.task]

        cut = max(last_batches.values())
        assert set(last_batches.values()) == {cut}  # the input was all there before the query: one cut
        at_cut = runtime.read_store(STORE, at_batch=cut).collect()
        assert sorted(at_cut) == sorted(rows)

        first = min(sink.batches)  # before the store's tasks had any input: their state is past it
        with pytest.raises(Exception, match="409 BATCH_PASSED") as passed:
            runtime.read_store(STORE, at_batch=first).collect()
        assert "that cut is gone" in str(passed.value)

        with pytest.raises(UnknownStore) as unknown:
            runtime.read_store("word-count")
        message = str(unknown.value)
        assert message == "'word-count' is not a store of it; its key-value stores: word-counts"
    finally:
        runtime.stop()
