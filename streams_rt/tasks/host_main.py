"""The task host as an OS process: `python -m streams_rt.tasks.host_main --config host.json`.

The config file (written by whoever starts the host: the local runtime, or an executor) holds the
application's properties, the coordinator's address, the topology ('module:attr'), the source
topics' partition counts (so host and driver agree on the layout), and optionally the instance id
(this host's `group.instance.id`), the bind address, a process to outlive no longer (`watch_pid`:
the driver in local mode, the executor's JVM on a cluster; `drain_outlives_watch_s`: how long a
drain under way goes on once it is gone, 0 by default), a lock file that makes it the only host
of its executor, a file where the host writes its endpoint once it serves, and the bound on closing
(`close_timeout_s`, CLOSE_TIMEOUT_S by default). The properties are
resolved once against the configuration registry; a bad or unknown key stops the host with one log
line (exit code 2). The host stops cleanly on SIGTERM or SIGINT, when the watched process is gone,
when the coordinator asks the application to shut down, when its member fails, or once drained (the
`drain` action, or SIGPWR, Spark's decommission signal: its tasks move to the other hosts first). Closing is bounded
(CLOSE_TIMEOUT_S): a close stuck past it dumps every thread's stack to the log and exits, since a host
that never exits would hold its executor's state locks for the executor's whole life."""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import functools
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from streams_rt.atomic_file import atomic_write_bytes
from streams_rt.config import ConfigError, ConfigErrors, StreamsConfig, resolve
from streams_rt.config.registry import GROUP_INSTANCE_ID
from streams_rt.log_levels import apply_log_levels
from streams_rt.processes import start_time, still_running
from streams_rt.protocol import LATEST_SUPPORTED_VERSION
from streams_rt.state.deferred_gc import freeze_startup_objects
from streams_rt.tasks.host import HostSettings, QueryServer, TaskHost, load_topology
from streams_rt.tasks.malloc_tuning import bound_malloc_arenas, use_system_arrow_pool
from streams_rt.tasks.membership import MemberConfig, MemberState
from streams_rt.tasks.release_stand_in import ReleaseStandIn, protocol_from_host_config
from streams_rt.tasks.restart import RESUME_VERSION_KEY, RestartRequest, carry_over

log = logging.getLogger("streams_rt.tasks.host")

# Committing, checkpointing and leaving take seconds; past this, something is stuck. Exiting then
# loses only the checkpoint: the next owner restores from the changelog (and under
# exactly_once_v2 the open transaction aborts).
CLOSE_TIMEOUT_S = 30.0


def host_settings(config: Mapping[str, Any]) -> HostSettings:
    """The host's settings from its config file; raises ConfigError or ConfigErrors."""
    props = dict(config["properties"])
    instance_id = config.get("instance_id")
    if instance_id is not None:
        given = props.setdefault(GROUP_INSTANCE_ID.name, instance_id)
        if given != instance_id:
            raise ConfigError(GROUP_INSTANCE_ID.name, given, f"{GROUP_INSTANCE_ID.name} {given!r} differs from the "
                              f"host's instance_id {instance_id!r}: set one of them")
    resolved = resolve(props)
    member = MemberConfig.from_config(resolved, config["coordinator"])
    return HostSettings(
        config=resolved,
        coordinator_address=config["coordinator"],
        member=dataclasses.replace(member, protocol=protocol_from_host_config(config),
                                   resume_version=_optional_int(config, RESUME_VERSION_KEY)),
        bind_host=config.get("bind_host", "127.0.0.1"),
        port=int(config.get("port", 0)),
        latest_supported_version=int(config.get("latest_supported_version", LATEST_SUPPORTED_VERSION)),
    )


def _optional_int(config: Mapping[str, Any], key: str) -> int | None:
    value = config.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ValueError(f"the host file's {key} {value!r} is not an integer")
    return value


QueryServerFactory = Callable[[StreamsConfig, TaskHost], QueryServer | None]


def main(argv: list[str] | None = None, query_server: QueryServerFactory | None = None) -> int:
    """`query_server` makes the host's interactive-query server from the application's configuration
    (`streams_rt.iq.host_main` passes it; `tasks` does not import `iq`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    args = parser.parse_args(argv)
    config = json.loads(args.config.read_text())
    logging.basicConfig(level=logging.INFO, format="%(asctime)s host[%(process)d] %(levelname)s %(name)s: %(message)s")
    try:
        apply_log_levels()  # STREAMS_RT_LOG_LEVEL, as in the driver: `DEBUG`, or `INFO,streams_rt.state=DEBUG`
    except ValueError as error:
        log.error("cannot start: %s", error)
        return 2
    bound_malloc_arenas()  # before any thread starts: see malloc_tuning
    use_system_arrow_pool()
    try:
        stand_in = ReleaseStandIn.take_from_environment(os.environ)  # an "old interpreter" wrapper's
        if stand_in is not None:
            config = {**config, **stand_in.host_config()}
        settings = host_settings(config)
    except (ConfigError, ConfigErrors, ValueError) as error:
        log.error("cannot start: %s", error)
        return 2
    topology = load_topology(config["topology"], config.get("topology_args"))
    layout = topology.layout(settings.member.application_id, config["source_partitions"])
    stop, decommissioned = threading.Event(), threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # SIGPWR is what Spark's decommissioning sends (decom.sh, decommission-worker.sh): drain, then stop.
    signal.signal(signal.SIGPWR, lambda *_: decommissioned.set())
    lock = None
    if config.get("lock_file"):
        lock = _try_lock(Path(config["lock_file"]))
        if lock is None:
            log.info("another task host holds %s: this executor has its host", config["lock_file"])
            return 0
    watched = config.get("watch_pid")
    watched_started = start_time(watched) if watched else None
    factory = None if query_server is None else functools.partial(query_server, settings.config)
    restarts: list[tuple[RestartRequest, dict[str, Any]]] = []

    def restart(request: RestartRequest) -> None:
        """The `restart` action: agree (the new host file is checked first), then stop to exec."""
        restarts.append((request, carry_over(request.host_config(config), host.member.status().used_version,
                                             host.query_endpoint)))
        stop.set()

    host = TaskHost(settings, topology, layout, query_server=factory, on_restart=restart)
    host.start()
    freeze_startup_objects()  # modules and the topology: never walked by a collection again
    if config.get("ready_file"):
        ready = {"pid": os.getpid(), "started": start_time(os.getpid()), "endpoint": host.endpoint,
                 "query_endpoint": host.query_endpoint,
                 "process_id": str(host.directory.process_id),
                 "watch_pid": watched, "coordinator": config["coordinator"]}
        atomic_write_bytes(Path(config["ready_file"]), json.dumps(ready).encode())
    code = 0
    watched_gone_at: float | None = None
    # How long a drain may go on once the watched process (an executor: ensure_host sets it) is gone.
    drain_outlives_s = float(config.get("drain_outlives_watch_s", 0.0))
    while not stop.wait(0.5):
        if watched and watched_gone_at is None and not still_running(watched, watched_started):
            if not (host.draining and drain_outlives_s > 0):
                log.warning("process %s (the driver or the executor) is gone: stopping", watched)
                break
            # A decommissioned executor exits once idle, within a second: the drain it asked for goes on.
            log.warning("process %s (the executor) is gone while this host drains: draining on, at most %.0f s",
                        watched, drain_outlives_s)
            watched_gone_at = time.monotonic()
        if watched_gone_at is not None and time.monotonic() - watched_gone_at > drain_outlives_s:
            log.warning("the drain did not end within %.0f s of the executor's exit: stopping", drain_outlives_s)
            break
        if decommissioned.is_set():
            host.request_drain("SIGPWR: the executor is being decommissioned")
        if host.drained:
            log.info("drained: every task of this host runs elsewhere now; stopping")
            break
        status = host.member.status()
        if status.shutdown_requested:
            log.warning("the application was asked to shut down: stopping")
            break
        if host.failed:  # the member or the state thread has logged why, once
            log.info("stopping: %s", "the member failed" if status.state is MemberState.FAILED
                     else "the state thread failed")
            code = 2
            break
    close_timeout_s = float(config.get("close_timeout_s", CLOSE_TIMEOUT_S))
    # A static member restarting in place stays in the group, to come back with its tasks (KIP-345);
    # stopping for good it leaves, since nothing brings it back (an executor's id is never reused).
    restarting = bool(restarts) and code == 0
    stays = restarting and settings.member.group_instance_id is not None
    log.info("closing: revoking and committing tasks, %s (at most %.0f s)",
             f"staying in the group as {settings.member.group_instance_id} to restart" if stays
             else "leaving the group", close_timeout_s)
    faulthandler.dump_traceback_later(close_timeout_s, exit=True)  # the stacks go to stderr: the host's log
    host.close(leave=not stays)
    faulthandler.cancel_dump_traceback_later()
    if lock is not None:
        lock.close()
    if restarting:
        _exec_restart(args.config, *restarts[-1])
    log.info("stopped (exit code %d)", code)
    return code


def _exec_restart(config_file: Path, request: RestartRequest, new_config: dict[str, Any]) -> None:
    """Replace this process with the host the restart asked for: the same pid and start time (so
    the ready record's watchers see their host come back), a new host file, maybe a new interpreter."""
    atomic_write_bytes(config_file, json.dumps(new_config).encode())
    python = request.python or sys.executable
    main_module = sys.modules["__main__"].__spec__
    module = main_module.name if main_module is not None else "streams_rt.tasks.host_main"
    changed = ", ".join(f"{k}={v!r}" for k, v in sorted(request.properties.items())) or "no property changes"
    log.info("restarting as asked: %s -m %s (%s%s)", python, module, changed,
             "" if request.latest_supported_version is None
             else f", latest supported version {request.latest_supported_version}")
    logging.shutdown()
    os.execve(python, [python, "-m", module, "--config", str(config_file)], {**os.environ, **request.env})


def _try_lock(path: Path) -> Any:
    """An exclusive flock held for the process's life (released by the kernel at exit, kill -9
    included), or None when another process holds it."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


if __name__ == "__main__":
    sys.exit(main())
