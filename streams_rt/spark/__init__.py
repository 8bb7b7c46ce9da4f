"""Spark integration: `StreamsRuntime` (a topology as a streaming DataFrame), the `streams_rt` data
source, task hosts on executors, and SparkSession set-up from `spark-conf/`.

`StreamsRuntime` is imported on first use: Spark's Python workers import `streams_rt.spark.source`,
which needs little of the runtime, and importing it all there (the coordinator, its HTTP stack)
cost each worker about 70 MB."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams_rt.spark.runtime import StreamsRuntime as StreamsRuntime

__all__ = ["StreamsRuntime"]


def __getattr__(name: str) -> object:
    if name == "StreamsRuntime":
        from streams_rt.spark.runtime import StreamsRuntime

        return StreamsRuntime
    raise AttributeError(name)
