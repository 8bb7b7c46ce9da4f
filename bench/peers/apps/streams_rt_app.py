"""The bench/peers workload in streams_rt, run in Spark local[2]: per-key count and sum in a RocksDB
store, every update to the output topic (the topology's sink). Runs until terminated.

    python bench/peers/apps/streams_rt_app.py BOOTSTRAP INPUT OUTPUT WORK_DIR BATCH [STANDBYS]"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from pyspark.sql import DataFrame  # noqa: E402

from streams_rt.topology import Serdes, StreamsBuilder, Topology  # noqa: E402


def add(key: str, amount: str, agg: list[int]) -> list[int]:
    return [agg[0] + 1, agg[1] + int(amount)]


def topology(source: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    table = (builder.stream(source, Serdes.string(), Serdes.string()).group_by_key()
             .aggregate(lambda: [0, 0], add, "count-sum", Serdes.json()))
    table.to_stream().map_values(lambda agg: f"{agg[0]},{agg[1]}").to(sink, Serdes.string(), Serdes.string())
    return builder.build()


def drain(batch: DataFrame, _batch_id: int) -> None:
    """Run the micro-batch (its rows are the output already written to the sink topic by the hosts)."""
    batch.count()


def main() -> None:
    from streams_rt import StreamsRuntime
    from streams_rt.spark.session import build_session

    bootstrap, source, sink, work, batch = sys.argv[1:6]
    standbys = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    spark = build_session("local[2]", "peers-streams-rt")
    spark.sparkContext.setLogLevel("ERROR")
    props: dict[str, Any] = {"application.id": f"peers-streams-rt-{uuid.uuid4().hex[:6]}",
                             "bootstrap.servers": bootstrap, "max.records.per.task.per.batch": int(batch),
                             "num.standby.replicas": standbys, "heartbeat.interval.ms": 500,
                             "session.timeout.ms": 10_000}
    runtime = StreamsRuntime(spark, "bench.peers.apps.streams_rt_app:topology", props,
                             topology_args={"source": source, "sink": sink}, work_dir=Path(work))
    query = runtime.stream().writeStream.foreachBatch(drain).trigger(processingTime="0 seconds").start()
    try:
        while query.isActive:
            time.sleep(1)
    finally:
        query.stop()
        runtime.stop()


if __name__ == "__main__":
    main()
