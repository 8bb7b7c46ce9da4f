"""PySpark alone, no streams_rt: a Python streaming data source with admission control runs real
micro-batches in local[2] and in local-cluster[2,1,1024] (separate executor JVMs and Python workers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

TOTAL_ROWS = 20
ROWS_PER_BATCH = 10


class _RangePartition(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


class _BoundedRangeReader(DataSourceStreamReader):
    """Offsets 0..TOTAL_ROWS, admitted at most ROWS_PER_BATCH per micro-batch, two partitions each."""

    def initialOffset(self) -> dict[str, int]:
        return {"offset": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(ROWS_PER_BATCH)

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else TOTAL_ROWS
        return {"offset": min(TOTAL_ROWS, start["offset"] + cap)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        middle = (start["offset"] + end["offset"]) // 2
        return [_RangePartition(start["offset"], middle), _RangePartition(middle, end["offset"])]

    def read(self, partition: InputPartition) -> Iterator[tuple[int, int]]:
        assert isinstance(partition, _RangePartition)
        executor_pid = _executor_jvm_pid()
        for value in range(partition.start, partition.end):
            yield (value, executor_pid)


def _executor_jvm_pid() -> int:
    """The pid of the executor JVM (CoarseGrainedExecutorBackend) among this Python worker's ancestors,
    or -1: in local mode the worker's ancestor is the driver JVM, which runs no such backend."""
    pid = os.getpid()
    while pid > 1:
        if b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat[stat.rindex(")") + 2:].split()[1])  # field 4, after "pid (comm) state"
    return -1


class BoundedRangeSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bounded_range"

    def schema(self) -> str:
        return "value INT, executor_pid INT"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _BoundedRangeReader()


def _run_two_batches(session: SparkSession, table: str) -> tuple[list[int], int, set[int]]:
    """The values read, the number of micro-batches with rows, and the executor JVM pids that read them."""
    session.dataSource.register(BoundedRangeSource)
    query = (session.readStream.format("bounded_range").load()
             .writeStream.format("memory").queryName(table).start())
    try:
        query.processAllAvailable()
        batches_with_rows = [p for p in query.recentProgress if p["numInputRows"] > 0]
    finally:
        query.stop()
    rows = session.sql(f"SELECT value, executor_pid FROM {table}").collect()
    return sorted(r.value for r in rows), len(batches_with_rows), {r.executor_pid for r in rows}


def test_two_micro_batches_in_local_mode(spark: SparkSession) -> None:
    values, batches, executor_pids = _run_two_batches(spark, "range_local")
    assert values == list(range(TOTAL_ROWS))
    assert batches == 2
    assert executor_pids == {-1}, "local mode has no executor JVM: the probe must not find one"


@pytest.mark.local_cluster
def test_two_micro_batches_in_local_cluster(spark_cluster: SparkSession) -> None:
    values, batches, executor_pids = _run_two_batches(spark_cluster, "range_cluster")
    assert values == list(range(TOTAL_ROWS))
    assert batches == 2
    jvm = spark_cluster.sparkContext._jvm
    assert jvm is not None
    driver_jvm_pid = jvm.java.lang.ProcessHandle.current().pid()
    assert len(executor_pids) == 2 and -1 not in executor_pids, (
        f"rows must come from Python workers of 2 distinct executor JVMs, got {executor_pids}")
    assert driver_jvm_pid not in executor_pids
