"""Task hosts on Spark executors: one per executor, started from the executor's Python workers.

`ensure_host(spec)` runs on an executor (in the start-up job, in the jobs the driver's executor watcher
runs for executors added later, and in `read`):
it starts `streams_rt.iq.host_main` detached (its own session, so it outlives the short-lived
Python worker) unless the executor already has one. The host holds a lock file in the executor's
working directory for its whole life, so a second start exits at once, and it watches the executor's
JVM: when the executor is gone, the host commits, leaves and exits, releasing its state locks (a host
draining then, as for a decommissioned executor, finishes its drain first: DRAIN_OUTLIVES_EXECUTOR_S)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams_rt.import_path import child_pythonpath
from streams_rt.processes import still_running
from streams_rt.tasks.static_membership import with_host_instance_id

HOST_DIR = "streams-rt-host"
READY_TIMEOUT_S = 120.0
# Spark lets a decommissioned executor exit as soon as it runs no task (about a second): the drain
# the driver asked its host for goes on that long after the executor's JVM is gone.
DRAIN_OUTLIVES_EXECUTOR_S = 120.0


@dataclass(frozen=True)
class HostSpec:
    """What every executor's host needs: plain data, shipped to the executors by Spark."""

    host_config: dict[str, Any]  # properties, coordinator, topology, topology_args, source_partitions
    environment: dict[str, str]  # the application's secret


def executor_jvm_pid() -> int | None:
    """The executor JVM (CoarseGrainedExecutorBackend) among this process's ancestors; None in local
    mode, where Python workers descend from the driver's JVM."""
    pid = os.getpid()
    while pid > 1:
        try:
            if b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        pid = int(stat[stat.rindex(")") + 2:].split()[1])  # field 4: the parent
    return None


def executor_id(jvm_pid: int) -> str:
    """Spark's id of the executor whose JVM this is (its `--executor-id` argument)."""
    args = Path(f"/proc/{jvm_pid}/cmdline").read_bytes().split(b"\0")
    return args[args.index(b"--executor-id") + 1].decode()


def ensure_host(spec: HostSpec) -> dict[str, Any]:
    """This executor's host (started now if it has none): its ready record (pid, endpoint,
    process_id, the executor JVM pid it watches) with the executor's Spark id (`executor_id`), by
    which the driver's executor watcher knows it."""
    executor = executor_jvm_pid()
    if executor is None:
        raise RuntimeError("ensure_host runs on an executor (local mode starts its hosts from the driver)")
    return {**_ensure_host(spec, executor), "executor_id": executor_id(executor)}


def _ensure_host(spec: HostSpec, executor: int) -> dict[str, Any]:
    directory = Path.cwd() / HOST_DIR
    directory.mkdir(exist_ok=True)
    ready = directory / "ready.json"
    found = _read_ready(ready, executor)
    if found is not None and found.get("coordinator") == spec.host_config["coordinator"]:
        return found
    if found is not None:  # a host of an earlier run of the driver: it gives way to this run's
        _stop(int(found["pid"]), found.get("started"))
    props = with_host_instance_id({**spec.host_config["properties"], "state.dir": str(directory / "state")},
                                  f"executor-{executor_id(executor)}")
    config = {**spec.host_config, "properties": props, "ready_file": str(ready),
              "lock_file": str(directory / "host.lock"), "watch_pid": executor,
              "drain_outlives_watch_s": DRAIN_OUTLIVES_EXECUTOR_S}
    config_file = directory / "host.json"
    config_file.write_text(json.dumps(config))
    os.chmod(config_file, 0o600)
    with open(directory / "host.log", "ab") as log:
        subprocess.Popen([sys.executable, "-m", "streams_rt.iq.host_main", "--config", str(config_file)],
                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         env={**os.environ, **spec.environment, "PYTHONPATH": child_pythonpath()},
                         start_new_session=True, cwd=str(directory))
    deadline = time.monotonic() + READY_TIMEOUT_S
    coordinator = spec.host_config["coordinator"]
    while (found := _read_ready(ready, executor)) is None or found.get("coordinator") != coordinator:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the task host of executor {executor} did not start within {READY_TIMEOUT_S:.0f} s; "
                               f"see {directory / 'host.log'}")
        time.sleep(0.1)
    return found


def _stop(pid: int, started: str | None, timeout_s: float = 60.0) -> None:
    """SIGTERM a host (it commits and leaves) and wait for it to exit and release its lock."""
    import signal

    if not still_running(pid, started):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while still_running(pid, started) and time.monotonic() < deadline:
        time.sleep(0.1)


def _read_ready(path: Path, executor: int) -> dict[str, Any] | None:
    """The ready record of a live host of this executor (a dead host's record is stale)."""
    try:
        record: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("watch_pid") != executor or not still_running(int(record.get("pid", 0)), record.get("started")):
        return None
    return record
