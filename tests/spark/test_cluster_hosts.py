"""Task hosts on real executors (local-cluster[2,1,1024]: two executor JVMs): one host per executor,
started by the runtime's start-up job, each watching its own executor JVM, each running tasks, and a
word count through them equal to the reference, in the query's output and in `read_store`."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.processes import still_running
from streams_rt.rpc.batches import HostClient
from tests.spark.test_streams_runtime import Topics, lines, reference, wait_for

pytestmark = [pytest.mark.local_cluster, pytest.mark.broker]


def test_each_executor_hosts_tasks(spark_cluster: SparkSession, kafka_broker: BrokerInfo, tmp_path: Path) -> None:
    topics = Topics(kafka_broker.bootstrap_servers)
    texts = lines(0, 300)
    topics.produce(texts)
    runtime = topics.runtime(spark_cluster, tmp_path, f"cluster-{uuid.uuid4().hex[:8]}", **{"num.standby.replicas": 1})
    table = f"c_{uuid.uuid4().hex[:8]}"
    query = runtime.stream().writeStream.format("memory").queryName(table).start()
    try:
        hosts = runtime.start_executor_hosts()  # already running: found again, not started twice
        executors = {h["watch_pid"] for h in hosts}
        jvm = spark_cluster.sparkContext._jvm
        assert jvm is not None
        driver_jvm = jvm.java.lang.ProcessHandle.current().pid()
        assert len(hosts) == 2 and len(executors) == 2 and driver_jvm not in executors
        for pid in executors:
            assert b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes()
        wait_for(spark_cluster, query, table, reference(texts))
        secret = runtime.app.coordinator.secret
        active = {}
        for host in hosts:
            with HostClient(host["endpoint"], secret=secret) as client:
                active[host["watch_pid"]] = client.status()["active"]
        assert all(active.values()), f"every executor's host runs tasks: {active}"
        rows = spark_cluster.sql(f"SELECT DISTINCT task FROM {table}").collect()
        assert len(rows) >= 2
        counts = runtime.read_store("word-counts")  # read on the executors from their hosts' query endpoints
        assert counts.rdd.getNumPartitions() == 4
        assert {r.key: r.value for r in counts.collect()} == reference(texts)
    finally:
        query.stop()
        runtime.stop()
    deadline = time.monotonic() + 60
    while any(still_running(h["pid"], h["started"]) for h in hosts) and time.monotonic() < deadline:
        time.sleep(0.2)
    lingering = [h for h in hosts if still_running(h["pid"], h["started"])]
    assert not lingering, "hosts leave with the application:\n" + "\n".join(host_log_tail(h["pid"]) for h in lingering)


def host_log_tail(pid: int, chars: int = 4000) -> str:
    """A live host's log (host.log in its working directory), for the failure message."""
    try:
        return f"host {pid}:\n" + (Path(f"/proc/{pid}/cwd") / "host.log").read_text(errors="replace")[-chars:]
    except OSError as e:
        return f"host {pid}: no log ({e})"
