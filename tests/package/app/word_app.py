"""A user's application with streams-rt installed from its wheel, run from its own folder:

    python word_app.py BOOTSTRAP MASTER [SPARK_CONF_JSON]

It writes some lines to a new topic, counts their words with StreamsRuntime on `MASTER` (local[2],
local-cluster[...], spark://...) until everything is processed, and prints one JSON line: the counts
the query wrote, what it should have, where streams_rt and the task hosts ran from."""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

import streams_rt
from streams_rt import StreamsRuntime

LINES = ["the quick brown fox", "jumps over the lazy dog", "the dog sleeps", "a fox runs"] * 50


def main() -> None:
    bootstrap, master = sys.argv[1], sys.argv[2]
    conf: dict[str, str] = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    builder = SparkSession.builder.master(master).appName("word-app")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    executors = int(conf.get("spark.executor.instances", "0"))
    sc = spark.sparkContext
    deadline = time.monotonic() + 180
    # Task hosts start on the executors registered when StreamsRuntime starts: wait for them.
    while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < executors:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {sc._jsc.sc().getExecutorMemoryStatus().size() - 1} executors registered")
        time.sleep(0.5)

    suffix = uuid.uuid4().hex[:8]
    lines, counts = f"lines-{suffix}", f"counts-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(lines, 2, 1), NewTopic(counts, 2, 1)]).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, line in enumerate(LINES):
        producer.produce(lines, line.encode(), f"k{i}".encode())
    assert producer.flush(60) == 0

    runtime = StreamsRuntime(spark, "word_topology:topology",
                             {"application.id": f"word-app-{suffix}", "bootstrap.servers": bootstrap,
                              "local.task.hosts": 1},
                             topology_args={"lines": lines, "counts": counts})
    query = runtime.stream().writeStream.format("memory").queryName(f"counts_{suffix}").start()
    query.processAllAvailable()
    rows = spark.sql(f"SELECT key, value FROM counts_{suffix}").collect()
    latest: dict[str, int] = {}
    for row in rows:
        latest[row.key] = max(latest.get(row.key, 0), row.value)
    hosts = runtime.query_endpoints()
    pythons = host_pythons(f"word-app-{suffix}")
    query.stop()
    runtime.stop()
    spark.stop()
    print(json.dumps({"counts": latest, "expected": dict(Counter(w for line in LINES for w in line.split())),
                      "streams_rt": streams_rt.__file__, "query_endpoints": hosts, "host_pythons": pythons}))


def host_pythons(application_id: str) -> list[str]:
    """The interpreter each of this application's task hosts runs (on this machine: local mode, or a
    cluster whose executors run here too)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().decode().split("\0")
            if "streams_rt.iq.host_main" in args:
                config = json.loads(Path(proc / "cwd", args[args.index("--config") + 1]).read_text())
                if config["properties"]["application.id"] == application_id:
                    found.append(args[0])
        except (OSError, ValueError, KeyError):
            continue
    return sorted(found)


if __name__ == "__main__":
    main()
