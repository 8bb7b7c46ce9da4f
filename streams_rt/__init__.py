"""streams_rt: Kafka Streams' stateful task model (local RocksDB state, changelogs, standbys,
sticky cooperative assignment, interactive queries) running inside PySpark Structured Streaming."""

__version__ = "0.1.0"
