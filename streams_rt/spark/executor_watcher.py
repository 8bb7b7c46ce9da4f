"""The driver's executor watcher: a thread that polls Spark's executor set and carries out what
the pure core (executor_watch.py) decides: starts hosts on new executors, asks the host of an
executor Spark decommissions to drain, logs executors that went away.

Why polling and not a SparkListener: a Python listener needs py4j's callback server and runs our
code on Spark's listener-bus thread (a slow call there delays or drops every other listener's
events); the scheduler's own state, read every `interval_s`, is all the watcher needs: the
executors (`SparkContext.getExecutorIds`) and which of them are being decommissioned
(`TaskSchedulerImpl.isExecutorDecommissioned`, set as soon as the driver learns it, whoever
started it: the cluster manager, SIGPWR to the executor, or the driver itself)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from pyspark import SparkContext

from streams_rt.rpc.batches import BatchError, HostClient
from streams_rt.spark.executor_hosts import HostSpec, ensure_host
from streams_rt.spark.executor_watch import Action, DrainHost, ExecutorWatch, HostDied, HostRecord, StartHost

log = logging.getLogger(__name__)


def spark_executors(sc: SparkContext) -> dict[str, bool]:
    """Spark's executors now: id -> whether it is being decommissioned."""
    jvm, context = sc._jvm, sc._jsc.sc()
    assert jvm is not None
    scheduler = context.taskScheduler()
    ids = jvm.scala.jdk.javaapi.CollectionConverters.asJava(context.getExecutorIds())
    return {str(e): bool(scheduler.isExecutorDecommissioned(e)) for e in ids}


def run_host_job(sc: SparkContext, spec: HostSpec, tasks: int) -> list[dict[str, Any]]:
    """A job of `tasks` tasks, each making sure its executor has a host: the ready records. Spark
    offers a job's first tasks to every free executor at once, so an idle new executor gets one."""
    return sc.parallelize(range(tasks), tasks).map(lambda _: ensure_host(spec)).collect()


class ExecutorWatcher:
    """Owned by StreamsRuntime on a cluster: `start()` after the start-up job, `stop()` first in
    the runtime's stop. `host_client(endpoint)` opens an RPC client to a host (secret, TLS)."""

    def __init__(self, sc: SparkContext, spec: HostSpec, host_client: Callable[[str], HostClient],
                 job_group: str, members: Callable[[], Collection[str]], restarted: Callable[[], None],
                 interval_s: float = 0.25, retry_s: float = 5.0) -> None:
        """`members()`: the endpoints of the hosts in the group now (a host of a live executor absent
        from them for a while is presumed dead and replaced); `restarted()` counts a replacement."""
        self._sc, self._spec, self._host_client, self._job_group = sc, spec, host_client, job_group
        self._members, self._restarted = members, restarted
        self._interval_s = interval_s
        self._core = ExecutorWatch(retry_s)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._in_job = threading.Event()  # a host job runs (stop cancels it)
        self._thread = threading.Thread(target=self._run, name="streams-rt-executor-watcher", daemon=True)

    def hosts(self) -> list[HostRecord]:
        with self._lock:
            return list(self._core.hosts().values())

    def hosts_found(self, records: list[dict[str, Any]]) -> None:
        with self._lock:
            replaced = self._core.hosts_found(records)
        for executor, dead, new in replaced:
            self._restarted()
            log.warning("the task host of executor %s restarted in its state directory: pid %s, %s (was pid %s)",
                        executor, new.get("pid"), new.get("endpoint"), dead.get("pid"))

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """No host is started or drained after this returns (a host job under way is cancelled)."""
        self._stop.set()
        if self._in_job.is_set():
            self._sc.cancelJobGroup(self._job_group)
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        self._sc.setJobGroup(self._job_group, "streams_rt: task hosts on new executors", interruptOnCancel=True)
        while not self._stop.wait(self._interval_s):
            try:
                executors = spark_executors(self._sc)
                members = self._members()
                with self._lock:
                    actions = self._core.observe(executors, time.monotonic(), members)
                for action in actions:
                    if self._stop.is_set():
                        return
                    self._carry_out(action)
            except Exception as e:  # noqa: BLE001 - py4j's or Spark's error in a poll or job: logged, tried again
                if self._stop.is_set():
                    return
                log.warning("executor watcher: %s: %s (trying again)", type(e).__name__, str(e).splitlines()[0][:300])

    def _carry_out(self, action: Action) -> None:
        if isinstance(action, StartHost):
            log.info("executor(s) %s have no task host: starting theirs", ", ".join(action.executor_ids))
            self._in_job.set()
            try:
                records = run_host_job(self._sc, self._spec, 2 * max(1, len(spark_executors(self._sc))))
            finally:
                self._in_job.clear()
            self.hosts_found(records)
        elif isinstance(action, HostDied):
            log.warning("the task host of executor %s (pid %s, %s) has not been in the group for %.0f s: presumed "
                        "dead; starting one there in %.0f s", action.executor_id, action.host.get("pid"),
                        action.host.get("endpoint"), self._core.dead_after_s, action.restart_in_s)
        elif isinstance(action, DrainHost):
            host = action.host
            log.info("Spark is decommissioning executor %s: draining its task host (pid %s, %s)",
                     action.executor_id, host.get("pid"), host.get("endpoint"))
            try:
                with self._host_client(str(host["endpoint"])) as client:
                    client.drain(f"Spark is decommissioning executor {action.executor_id}")
            except BatchError as e:
                log.warning("the task host of executor %s (pid %s) refused to drain: %s", action.executor_id,
                            host.get("pid"), e)
        else:
            why = "decommissioned" if action.decommissioned else "lost"
            if action.host is None:
                log.info("executor %s is gone (%s); it had no task host", action.executor_id, why)
            else:
                log.info("executor %s is gone (%s), and its task host (pid %s) with it: its tasks move to the "
                         "other hosts", action.executor_id, why, action.host.get("pid"))
