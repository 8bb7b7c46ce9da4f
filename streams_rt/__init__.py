"""streams_rt: Kafka Streams' stateful task model (local RocksDB state, changelogs, standbys,
sticky cooperative assignment, interactive queries) running inside PySpark Structured Streaming."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`from streams_rt import StreamsRuntime` without importing Spark for every other use."""
    if name == "StreamsRuntime":
        from streams_rt.spark.runtime import StreamsRuntime

        return StreamsRuntime
    raise AttributeError(name)
