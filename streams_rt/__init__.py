"""streams_rt: Kafka Streams' stateful task model (local RocksDB state, changelogs, standbys,
sticky cooperative assignment, interactive queries) running inside PySpark Structured Streaming."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the type checker sees the class; at run time __getattr__ imports it on first use
    from streams_rt.spark.runtime import StreamsRuntime as StreamsRuntime

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`from streams_rt import StreamsRuntime` without importing Spark for every other use."""
    if name == "StreamsRuntime":
        from streams_rt.spark.runtime import StreamsRuntime

        return StreamsRuntime
    raise AttributeError(name)
