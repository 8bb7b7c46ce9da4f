"""`StreamsRuntime`: a topology as a streaming DataFrame.

    runtime = StreamsRuntime(spark, "my_app.topology:build", config)
    query = runtime.stream().writeStream.format(...).option("checkpointLocation", ...).start()
    runtime.stop()

It checks the configuration (Kafka Streams' names; errors name their key, before anything starts),
makes the internal topics, starts the coordinator in this (the driver's) process, and starts the task
hosts: `local.task.hosts` of them next to the driver in local mode, one per executor on a cluster."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from streams_rt.config import resolve
from streams_rt.config.registry import APPLICATION_ID, LOCAL_TASK_HOSTS, STATE_DIR
from streams_rt.iq.routing import store_catalog
from streams_rt.rpc.batches import HostClient
from streams_rt.rpc.settings import ControlPlaneSettings
from streams_rt.runtime.local import LocalApplication
from streams_rt.spark.executor_hosts import HostSpec
from streams_rt.spark.executor_watcher import ExecutorWatcher, run_host_job
from streams_rt.spark.source import (
    HOST_CONFIG_OPTION,
    NAME,
    SECRET_OPTION,
    TRUSTSTORE_OPTION,
    StreamsRtDataSource,
)
from streams_rt.spark.store_columns import store_schema
from streams_rt.spark.store_source import NAME as STORE_SOURCE
from streams_rt.spark.store_source import SECRET_OPTION as STORE_SECRET_OPTION
from streams_rt.spark.store_source import TIMEOUT_MS, StoreDataSource
from streams_rt.spark.store_source import TLS_OPTION as STORE_TLS_OPTION
from streams_rt.spark.store_source import TRUSTSTORE_OPTION as STORE_TRUSTSTORE_OPTION
from streams_rt.spark.worker_python import check_local_workers, executors_lack_streams_rt
from streams_rt.tasks.output import OutputSchema
from streams_rt.tasks.release_stand_in import ReleaseStandIn

log = logging.getLogger(__name__)


def local_work_dir(state_dir: Path, application_id: str) -> Path:
    """Where a local-mode application's hosts keep their directories (each its own `state.dir`):
    named by the application, under its `state.dir`, as Kafka Streams names its state directory."""
    return state_dir / f"{application_id}.local"


class UnknownStore(ValueError):
    """read_store was asked for a store the topology does not have (or one it cannot read)."""


class StreamsRuntime:
    def __init__(self, spark: SparkSession, topology: str, config: Mapping[str, Any],
                 topology_args: Mapping[str, Any] | None = None, work_dir: Path | None = None,
                 release_stand_in: ReleaseStandIn | None = None) -> None:
        """`topology` is 'module:attr' (a Topology, or a function returning one, called with
        `topology_args`): the hosts import it, on this machine or on the executors.
        `work_dir` holds the local hosts' directories (local mode); by default
        `<state.dir>/<application.id>.local`, stable across runs as Kafka Streams' state directory
        is, so a restarted driver's hosts reopen their stores rather than restore them. A local host
        that dies is restarted there (runtime/host_supervisor.py).
        `release_stand_in` (tests only) starts every host, executors' included, as an older release."""
        props = {k: v for k, v in config.items()}
        self.config = resolve(props)  # one line per problem, naming the key
        self.spark = spark
        master = spark.sparkContext.master or ""
        self.local = master.startswith("local[") or master == "local"
        if self.local:
            check_local_workers(spark.sparkContext.pythonExec)  # WorkerPythonError, one line, before anything starts
        hosts = self.config.get(LOCAL_TASK_HOSTS) if self.local else 0
        self.work_dir = work_dir or local_work_dir(self.config.get(STATE_DIR), self.config.get(APPLICATION_ID))
        self.app = LocalApplication(topology, props, self.work_dir, hosts=hosts, topology_args=topology_args,
                                    release_stand_in=release_stand_in, supervise=self.local)
        self.schema = OutputSchema(self.app.topology)
        # On a cluster: hosts on the executors Spark adds later, drains on decommission (executor_watcher.py).
        self._watcher: ExecutorWatcher | None = None
        if not self.local:
            roots = ControlPlaneSettings.from_properties(props).client_root_certs()
            self._watcher = ExecutorWatcher(
                spark.sparkContext, self.host_spec(),
                lambda endpoint: HostClient(endpoint, timeout_s=30, secret=self.app.coordinator.secret,
                                            tls_root_certs=roots),
                job_group=f"streams-rt-hosts-{self.application_id}",
                members=self.app.coordinator.member_endpoints, restarted=self.app.coordinator.host_restarted)
            self.start_executor_hosts()
            self._watcher.start()

    @property
    def application_id(self) -> str:
        return self.app.application_id

    def host_spec(self) -> HostSpec:
        secret = self.app.coordinator.secret
        return HostSpec(self.app.host_config(), secret.environment() if secret is not None else {})

    def start_executor_hosts(self, timeout_s: float = 180.0) -> list[dict[str, Any]]:
        """One host on every executor (a job with a few tasks per executor; each task starts its
        executor's host unless it has one), until the group has a member per executor."""
        sc = self.spark.sparkContext
        executors = max(1, sc._jsc.sc().getExecutorMemoryStatus().size() - 1)
        spec = self.host_spec()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                ready = run_host_job(sc, spec, executors * 4)
            except Exception as error:
                explained = executors_lack_streams_rt(error)
                if explained is None:
                    raise
                raise explained from None
            hosts = {r["pid"]: r for r in ready}
            members = len(self.app.coordinator.describe()["members"])
            if len(hosts) >= executors and members >= len(hosts):
                log.info("task hosts on %d executors: %s", executors, sorted(hosts))
                assert self._watcher is not None
                self._watcher.hosts_found(list(hosts.values()))
                return list(hosts.values())
            if time.monotonic() > deadline:
                raise RuntimeError(f"task hosts on {len(hosts)} of {executors} executors after {timeout_s:.0f} s")
            time.sleep(0.5)

    def read_store(self, store: str, at_batch: int | None = None, timeout_ms: int = TIMEOUT_MS) -> DataFrame:
        """The store's live entries as a batch DataFrame (key, value, task, batch), one Spark
        partition per task, read from the hosts' query endpoints; with `at_batch`, only from state
        committed at that batch on every task (one consistent cut). See docs/iq.md."""
        info = store_catalog(self.app.topology, self.app.layout).get(store)
        if info is None or info.windowed:
            problem = "is a window store: read_store reads key-value stores" if info else "is not a store of it"
            stores = [s.name for s in store_catalog(self.app.topology, self.app.layout).values() if not s.windowed]
            raise UnknownStore(f"{store!r:.80} {problem}; its key-value stores: {', '.join(stores) or 'none'}")
        self.spark.dataSource.register(StoreDataSource)
        options = {"store": store, "key_serde": info.key_serde.name, "value_serde": info.value_serde.name,
                   "schema": store_schema(info.key_serde.name, info.value_serde.name),
                   "hosts": ",".join(self.query_endpoints()), "timeout_ms": str(timeout_ms),
                   "at_batch": "" if at_batch is None else str(at_batch)}
        secret, truststore = self.app.coordinator.secret, self.config.get("rpc.ssl.truststore.location")
        if secret is not None:
            options[STORE_SECRET_OPTION] = secret.token
        if self.config.get("rpc.ssl.enabled"):
            options[STORE_TLS_OPTION] = "true"
            if truststore is not None:
                options[STORE_TRUSTSTORE_OPTION] = str(truststore)
        return self.spark.read.format(STORE_SOURCE).options(**options).load()

    def query_endpoints(self) -> list[str]:
        """The hosts' query endpoints this driver knows (any one gives the group's metadata)."""
        if self.local:
            return [e for h in self.app.hosts.values() if (e := h.query_endpoint)]
        hosts = self._watcher.hosts() if self._watcher is not None else []
        return [str(r["query_endpoint"]) for r in hosts if r.get("query_endpoint")]

    def stream(self) -> DataFrame:
        """The topology's output rows (topic, key, value, timestamp, task) as a streaming DataFrame."""
        self.spark.dataSource.register(StreamsRtDataSource)
        secret = self.app.coordinator.secret
        reader = (self.spark.readStream.format(NAME)
                  .option("coordinator", self.app.coordinator.address)
                  .option("application.id", self.application_id)
                  .option("bootstrap.servers", self.app.bootstrap)
                  .option("schema", self.schema.ddl)
                  .option("max.records.per.task.per.batch", str(self.config.get("max.records.per.task.per.batch"))))
        if secret is not None:
            reader = reader.option(SECRET_OPTION, secret.token)
        if not self.local:
            reader = reader.option(HOST_CONFIG_OPTION, json.dumps(self.app.host_config()))
        truststore = self.config.get("rpc.ssl.truststore.location")
        if self.config.get("rpc.ssl.enabled") and truststore is not None:
            reader = reader.option(TRUSTSTORE_OPTION, str(truststore))
        return reader.load()

    def stop(self, timeout_s: float = 60.0, keep_hosts: bool = False) -> None:
        """Stop the hosts (each commits, checkpoints and leaves the group) and the coordinator. The
        hosts on executors are asked through the group (KIP-725's shutdown request). `keep_hosts`
        leaves the executors' hosts running, cut off from this driver, as a driver crash or redeploy
        would: the next driver's start-up replaces each of them with its own."""
        if self._watcher is not None:
            self._watcher.stop()
        if self._watcher is not None and not keep_hosts:
            self.app.coordinator.request_shutdown("StreamsRuntime.stop()")
            deadline = time.monotonic() + timeout_s
            while (members := self.app.coordinator.describe()["members"]) and time.monotonic() < deadline:
                time.sleep(0.1)
            if members:
                log.warning("StreamsRuntime.stop(): %d member(s) still in the group after %.0f s (%s); stopping the "
                            "coordinator anyway: their hosts stop when their executors do", len(members), timeout_s,
                            ", ".join(sorted(members)))
        self.app.close()
