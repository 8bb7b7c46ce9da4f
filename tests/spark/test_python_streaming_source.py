"""A Python streaming data source with admission control runs real micro-batches in local[2] and in
local-cluster[2,1,1024] (separate executor JVMs and Python workers)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows

TOTAL_ROWS = 20
ROWS_PER_BATCH = 10


class _RangePartition(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


class _BoundedRangeReader(DataSourceStreamReader):
    """Offsets 0..TOTAL_ROWS, admitted at most ROWS_PER_BATCH per micro-batch, two partitions each."""

    def initialOffset(self) -> dict:
        return {"offset": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(ROWS_PER_BATCH)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else TOTAL_ROWS
        return {"offset": min(TOTAL_ROWS, start["offset"] + cap)}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        middle = (start["offset"] + end["offset"]) // 2
        return [_RangePartition(start["offset"], middle), _RangePartition(middle, end["offset"])]

    def read(self, partition: _RangePartition):
        import os

        for value in range(partition.start, partition.end):
            yield (value, os.getpid())


class BoundedRangeSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bounded_range"

    def schema(self) -> str:
        return "value INT, worker_pid INT"

    def streamReader(self, schema):
        return _BoundedRangeReader()


def _run_two_batches(session: SparkSession, table: str) -> tuple[list[int], int, set[int]]:
    session.dataSource.register(BoundedRangeSource)
    query = (session.readStream.format("bounded_range").load()
             .writeStream.format("memory").queryName(table).start())
    try:
        query.processAllAvailable()
        batches_with_rows = [p for p in query.recentProgress if p["numInputRows"] > 0]
    finally:
        query.stop()
    rows = session.sql(f"SELECT value, worker_pid FROM {table}").collect()
    return sorted(r.value for r in rows), len(batches_with_rows), {r.worker_pid for r in rows}


def test_two_micro_batches_in_local_mode(spark: SparkSession) -> None:
    values, batches, _ = _run_two_batches(spark, "range_local")
    assert values == list(range(TOTAL_ROWS))
    assert batches == 2


@pytest.mark.local_cluster
def test_two_micro_batches_in_local_cluster(spark_cluster: SparkSession) -> None:
    values, batches, worker_pids = _run_two_batches(spark_cluster, "range_cluster")
    assert values == list(range(TOTAL_ROWS))
    assert batches == 2
    import os
    assert os.getpid() not in worker_pids, "rows must come from executor Python workers"
