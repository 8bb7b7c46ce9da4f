"""The source's Spark partitions: one per host, each with its tasks' batches (pure, no Spark)."""

from __future__ import annotations

import pickle

from streams_rt.spark.source import HostBatches, TaskBatch, by_host


def batch(task: str, endpoint: str) -> TaskBatch:
    return TaskBatch(task, endpoint, 3, (("in", int(task.split("_")[1]), 0, 10),), 7)


def test_one_partition_per_host_with_its_tasks_in_plan_order() -> None:
    planned = [batch("0_2", "grpc://b"), batch("0_0", "grpc://a"), batch("0_1", "grpc://b"), batch("0_3", "")]

    partitions = by_host(planned)

    assert [p.endpoint for p in partitions] == ["", "grpc://a", "grpc://b"]
    assert [[b.task for b in p.batches] for p in partitions] == [["0_3"], ["0_0"], ["0_2", "0_1"]]
    assert sorted(b.task for p in partitions for b in p.batches) == sorted(b.task for b in planned)


def test_a_partition_travels_as_plain_data() -> None:
    """Spark pickles partitions to the executors (its own channel, driver to executor)."""
    partition = HostBatches("grpc://a", (batch("0_0", "grpc://a"), batch("0_1", "grpc://a")))

    assert pickle.loads(pickle.dumps(partition)) == partition
    assert partition.batches[1].request().ranges == batch("0_1", "grpc://a").tp_ranges()
