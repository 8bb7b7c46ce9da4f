"""Spark integration: `StreamsRuntime` (a topology as a streaming DataFrame), the `streams_rt` data
source, task hosts on executors, and SparkSession set-up from `spark-conf/`."""

from streams_rt.spark.runtime import StreamsRuntime

__all__ = ["StreamsRuntime"]
