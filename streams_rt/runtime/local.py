"""A whole application on one machine, in the process model of a cluster: the coordinator in this
process (as in the Spark driver), each task host its own OS process, the internal topics made
first. Tests, benchmarks and the examples' non-Spark runs use it."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from streams_rt.config import resolve
from streams_rt.config.registry import REPLICATION_FACTOR
from streams_rt.coordinator.service import Coordinator, start_coordinator
from streams_rt.import_path import child_pythonpath
from streams_rt.kafka.offsets import end_offsets
from streams_rt.kafka.reachability import require_broker
from streams_rt.protocol import TaskId
from streams_rt.rpc.batches import HostClient
from streams_rt.rpc.settings import ControlPlaneSettings
from streams_rt.runtime.batch_loop import BatchLoop
from streams_rt.runtime.host_supervisor import HostSupervisor
from streams_rt.runtime.planning import RUNNING
from streams_rt.runtime.topics import (
    check_output_topics,
    ensure_internal_topics,
    source_partitions,
    sum_by_task,
    task_changelogs,
)
from streams_rt.tasks.host import load_topology
from streams_rt.tasks.release_stand_in import ReleaseStandIn
from streams_rt.tasks.static_membership import with_host_instance_id

log = logging.getLogger(__name__)

class HostFailed(RuntimeError):
    pass


@dataclass
class HostProcess:
    name: str
    proc: subprocess.Popen[bytes]
    ready_file: Path
    log_file: Path
    start_args: dict[str, Any] = field(default_factory=dict)  # what start_host was given: a restart reuses it

    @property
    def endpoint(self) -> str | None:
        try:
            return str(json.loads(self.ready_file.read_text())["endpoint"])
        except (OSError, ValueError, KeyError):
            return None

    @property
    def query_endpoint(self) -> str | None:
        """host:port of its interactive-query endpoint (None: not serving, or not started yet)."""
        try:
            found = json.loads(self.ready_file.read_text()).get("query_endpoint")
        except (OSError, ValueError):
            return None
        return None if found is None else str(found)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class LocalApplication:
    """`topology` is a 'module:attr' reference (hosts import it); `properties` are the
    application's Kafka-style properties (application.id, bootstrap.servers, state.dir, ...);
    `release_stand_in` starts every host as a test's stand-in for an older release. With
    `supervise`, a host that dies unasked is restarted (runtime/host_supervisor.py); tests that kill
    hosts and start them again themselves leave it off."""

    def __init__(self, topology: str, properties: Mapping[str, Any], work_dir: Path, hosts: int = 2,
                 host_properties: Mapping[str, Any] | None = None, topology_args: Mapping[str, Any] | None = None,
                 release_stand_in: ReleaseStandIn | None = None, supervise: bool = False) -> None:
        self.topology_ref = topology
        self.topology_args = dict(topology_args or {})
        self.properties = dict(properties)
        self.application_id = str(properties["application.id"])
        self.bootstrap = str(properties["bootstrap.servers"])
        self.work_dir = work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        self.topology = load_topology(topology, self.topology_args)
        require_broker(self.bootstrap)  # KafkaUnreachable, one line, before any client starts logging retries
        self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self.partitions = source_partitions(self._admin, self.topology)
        self.layout = self.topology.layout(self.application_id, self.partitions)
        # replication.factor for every internal topic, as Kafka Streams' InternalTopicManager makes them
        ensure_internal_topics(self._admin, self.topology, self.layout,
                               replication_factor=resolve(self.properties).get(REPLICATION_FACTOR))
        check_output_topics(self._admin, self.topology)
        changelogs = task_changelogs(self.topology, self.layout)
        sources = {sub: list(topics) for sub, topics in self.layout.inputs.items()}
        self.coordinator: Coordinator = start_coordinator(
            self.properties, self.layout.tasks(), source_topics=sources,
            changelog_end_offsets=lambda: sum_by_task(
                end_offsets(self._admin, [tp for tps in changelogs.values() for tp in tps]), changelogs),
        )
        self._host_properties = dict(host_properties or {})
        self.release_stand_in = release_stand_in
        self.hosts: dict[str, HostProcess] = {}
        self._supervisor: HostSupervisor | None = None
        if supervise:
            self._supervisor = HostSupervisor(self._exit_codes, self._start_again, self.coordinator.host_restarted)
            self._supervisor.start()
        for i in range(hosts):
            self.start_host(f"host-{i}")

    # -- hosts ---------------------------------------------------------------------------------
    def start_host(self, name: str, env: Mapping[str, str] | None = None,
                   properties: Mapping[str, Any] | None = None, close_timeout_s: float | None = None,
                   latest_supported_version: int | None = None) -> HostProcess:
        """A host process; its state lives in `<work_dir>/<name>/state` (kept across restarts).
        `properties` are this host's own; `env` extra environment (e.g. fault points);
        `close_timeout_s` bounds its close (host_main's default otherwise);
        `latest_supported_version` caps the metadata version it speaks (a stand-in for an older
        release in upgrade tests)."""
        directory = self.work_dir / name
        directory.mkdir(exist_ok=True)
        props = with_host_instance_id({**self.properties, "state.dir": str(directory / "state"),
                                       **self._host_properties, **(properties or {})}, name)
        ready = directory / "ready.json"
        ready.unlink(missing_ok=True)
        config = {**self.host_config(), "properties": props, "ready_file": str(ready), "watch_pid": os.getpid()}
        if close_timeout_s is not None:
            config["close_timeout_s"] = close_timeout_s
        if latest_supported_version is not None:
            config["latest_supported_version"] = latest_supported_version
        config_file = directory / "host.json"
        config_file.write_text(json.dumps(config))
        log_file = directory / "host.log"
        secret = self.coordinator.secret.environment() if self.coordinator.secret is not None else {}
        extra_env = dict(env or {})  # what a restart by the supervisor passes again
        env = {**os.environ, **secret, **extra_env, "PYTHONPATH": child_pythonpath()}
        # A process group of its own: Ctrl-C in the driver's terminal is for the driver, which stops
        # its query first and then its hosts (a host ends with the driver anyway: it watches its pid).
        with open(log_file, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "streams_rt.iq.host_main", "--config", str(config_file)],
                                    stdout=out, stderr=subprocess.STDOUT, env=env,
                                    process_group=0)
        start_args = {"env": extra_env, "properties": dict(properties or {}),
                      "close_timeout_s": close_timeout_s, "latest_supported_version": latest_supported_version}
        host = self.hosts[name] = HostProcess(name, proc, ready, log_file, start_args)
        deadline = time.monotonic() + 60
        while host.endpoint is None:
            if not host.alive:
                raise HostFailed(f"host {name} exited with {proc.returncode}:\n{host.log_tail()}")
            if time.monotonic() > deadline:
                raise HostFailed(f"host {name} did not start within 60 s:\n{host.log_tail()}")
            time.sleep(0.05)
        if self._supervisor is not None:
            self._supervisor.started(name)
        return host

    def _exit_codes(self) -> dict[str, int | None]:
        """Each host's exit code (None: alive), for the supervisor."""
        return {name: host.proc.poll() for name, host in list(self.hosts.items())}

    def _start_again(self, name: str) -> int:
        """The supervisor's restart of a host that died: as it was started, in its state directory.
        Raises HostFailed when it does not come up (the supervisor then backs off)."""
        host = self.hosts[name]
        if host.alive:
            return host.proc.pid
        return self.start_host(name, **host.start_args).proc.pid

    def host_config(self) -> dict[str, Any]:
        """What every host of this application is started with (hosts add their own state.dir,
        ready file and watched process), a release stand-in's keys included."""
        return {
            "properties": {**self.properties, **self._host_properties},
            "coordinator": self.coordinator.address,
            "topology": self.topology_ref,
            "topology_args": self.topology_args,
            "source_partitions": self.partitions,
            **(self.release_stand_in.host_config() if self.release_stand_in else {}),
        }

    def restart_host(self, name: str, properties: Mapping[str, Any] | None = None, python: str | None = None,
                     env: Mapping[str, str] | None = None, latest_supported_version: int | None = None,
                     timeout_s: float = 120.0) -> HostProcess:
        """Bounce one host in place with new settings or code (its `restart` action): it checks the
        request, closes cleanly and execs itself. `properties` set keys (None removes one, as
        `upgrade.from` on an upgrade's second bounce); `python` another interpreter (environment);
        `latest_supported_version` a metadata version cap (None: none). Returns once the new host
        serves; raises HostFailed if it does not, BatchError if the host refused."""
        host = self.hosts[name]
        before = host.endpoint
        request = {"properties": dict(properties or {}), "python": python, "env": dict(env or {}),
                   "latest_supported_version": latest_supported_version}
        roots = ControlPlaneSettings.from_properties(self.properties).client_root_certs()
        with HostClient(str(before), secret=self.coordinator.secret, tls_root_certs=roots) as client:
            client.restart(request)
        kept = {**host.start_args["properties"], **(properties or {})}  # a later supervised restart keeps them
        host.start_args["properties"] = {k: v for k, v in kept.items() if v is not None}
        deadline = time.monotonic() + timeout_s
        while host.endpoint in (None, before):
            if not host.alive:
                raise HostFailed(f"host {name} exited with {host.proc.returncode} while restarting:\n{host.log_tail()}")
            if time.monotonic() > deadline:
                raise HostFailed(f"host {name} did not come back within {timeout_s:.0f} s:\n{host.log_tail()}")
            time.sleep(0.05)
        log.info("host %s restarted (pid %d): now serving at %s", name, host.proc.pid, host.endpoint)
        return host

    def stop_host(self, name: str, kill: bool = False, timeout_s: float = 60.0) -> int:
        """SIGTERM (a clean stop: commit, leave) or SIGKILL; returns the exit code. Never restarted."""
        if self._supervisor is not None:
            self._supervisor.stopped(name)
        host = self.hosts.pop(name)
        if host.alive:
            host.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            return host.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            host.proc.kill()
            raise HostFailed(f"host {name} did not stop within {timeout_s} s:\n{host.log_tail()}") from None

    # -- running -------------------------------------------------------------------------------
    def loop(self, max_records_per_task: int | None = 100_000) -> BatchLoop:
        return BatchLoop(self.coordinator.address, self.application_id, self.bootstrap, max_records_per_task,
                         secret=self.coordinator.secret,
                         tls_root_certs=ControlPlaneSettings.from_properties(self.properties).client_root_certs())

    def wait_until_running(self, loop: BatchLoop, timeout_s: float = 120.0) -> None:
        """Until every task is RUNNING on some host and the group is settled: STABLE, every live
        host a member that has reported, no revocation pending. Tasks all RUNNING alone is not
        enough: the first host can run everything a moment before the next one joins, and that
        join's rebalance would then refuse the caller's first batches."""
        deadline = time.monotonic() + timeout_s
        while True:
            for host in self.hosts.values():
                if not host.alive:
                    raise HostFailed(f"host {host.name} exited with {host.proc.returncode}:\n{host.log_tail()}")
            _, statuses = loop.status()
            unsettled = self._unsettled()
            if statuses and all(s.phase == RUNNING for s in statuses.values()) and unsettled is None:
                return
            if time.monotonic() > deadline:
                phases = {str(t): s.phase for t, s in sorted(statuses.items())}
                raise TimeoutError(f"tasks not running after {timeout_s} s: {phases}; group: {unsettled or 'settled'}")
            time.sleep(0.1)

    def _unsettled(self) -> str | None:
        """Why the group is not settled yet (None: it is), from the coordinator's operator view."""
        view = self.coordinator.status()
        if view["state"] != "STABLE":
            return f"state {view['state']}"
        reported = {h["endpoint"] for h in view["hosts"]}
        missing = sorted(h.name for h in self.hosts.values() if h.endpoint not in reported)
        if missing:
            return f"not yet a reporting member: {', '.join(missing)}"
        revoking = sorted(h["name"] for h in view["hosts"] if h["revoke"])
        return f"revoking on {', '.join(revoking)}" if revoking else None

    def owners(self, loop: BatchLoop) -> dict[TaskId, str | None]:
        _, statuses = loop.status()
        return {t: s.owner for t, s in statuses.items()}

    def close(self) -> None:
        if self._supervisor is not None:
            self._supervisor.close()
        for name in list(self.hosts):
            try:
                self.stop_host(name)
            except HostFailed as e:
                log.warning("%s", e)
        self.coordinator.close()
        # Destroyed now (closing twice is fine): a Kafka client left alive keeps reconnecting to a
        # broker that is gone, and logs every attempt.
        if hasattr(self, "_admin"):
            del self._admin
