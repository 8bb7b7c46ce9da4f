"""The bench/peers workload in Spark Structured Streaming (local[2]), reading the input with Spark's
built-in Kafka source and writing every updated `count,sum` with its Kafka sink, state in the RocksDB
state store provider with changelog checkpointing. Two flavours:

- `sql`: `groupBy(key).agg(count, sum)`, the JVM operators;
- `python`: `transformWithStateInPandas`, Spark's Python stateful API (a ValueState per key).

    python bench/peers/apps/spark_apps.py sql|python BOOTSTRAP INPUT OUTPUT WORK_DIR MAX_OFFSETS_PER_TRIGGER [MASTER]

MASTER is local[2] unless given (the failover figure runs local-cluster[2,1,1024]: executor JVMs to kill).

Runs until terminated. The Kafka connector (spark-sql-kafka-0-10 and what it needs beyond Spark's own
jars) is resolved from Maven Central by `make bench-peers` into build/peers-spark-kafka/libs
(bench/peers/spark-kafka/pom.xml)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as fn
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from streams_rt.spark.session import build_session  # noqa: E402

KAFKA_CONNECTOR = REPO / "build" / "peers-spark-kafka" / "libs"


def session(work: Path, master: str, shuffle_partitions: int = 4) -> SparkSession:
    return build_session(master, "peers-spark", {
        # Spark's own default heap: its state and aggregation live in this JVM (streams_rt's app runs
        # with spark-conf's 512 MB, its state being in the task hosts).
        "spark.driver.memory": "1g",
        "spark.jars": ",".join(str(jar) for jar in sorted(KAFKA_CONNECTOR.glob("*.jar"))),
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.local.dir": str(work / "spark-local"),
    })


def read(spark: SparkSession, bootstrap: str, topic: str, max_offsets: int) -> DataFrame:
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", topic).option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", str(max_offsets)).load())
    return raw.select(fn.col("key").cast("string").alias("key"),
                      fn.col("value").cast("string").cast("long").alias("amount"))


def with_sql(records: DataFrame) -> DataFrame:
    totals = records.groupBy("key").agg(fn.count(fn.lit(1)).alias("c"), fn.sum("amount").alias("s"))
    return totals.select("key", fn.concat_ws(",", fn.col("c").cast("string"), fn.col("s").cast("string"))
                         .alias("value"))


class CountSum(StatefulProcessor):
    """Per key, one ValueState (count, sum); every batch that touches a key emits its new totals."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.totals = handle.getValueState("totals", "c long, s long")

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:  # noqa: N802, N803
        stored = self.totals.get()  # None for a new key (one call to the state server, not two)
        count, total = stored if stored is not None else (0, 0)
        for frame in rows:
            count += len(frame)
            total += int(frame["amount"].sum())
        self.totals.update((count, total))
        yield pd.DataFrame({"key": [key[0]], "value": [f"{count},{total}"]})

    def close(self) -> None:
        pass


def with_python(records: DataFrame) -> DataFrame:
    return records.groupBy("key").transformWithStateInPandas(
        statefulProcessor=CountSum(), outputStructType="key string, value string", outputMode="Update",
        timeMode="None")


def main() -> None:
    flavour, bootstrap, source, sink, work, max_offsets = sys.argv[1:7]
    spark = session(Path(work), sys.argv[7] if len(sys.argv) > 7 else "local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    records = read(spark, bootstrap, source, int(max_offsets))
    output = with_sql(records) if flavour == "sql" else with_python(records)
    query = (output.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", sink)
             .option("checkpointLocation", str(Path(work) / "checkpoint")).outputMode("update")
             .trigger(processingTime="0 seconds").start())
    query.awaitTermination()


if __name__ == "__main__":
    main()
