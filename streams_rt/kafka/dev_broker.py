"""A real single-node Apache Kafka broker (KRaft, combined broker+controller) on loopback, for
development, demos and tests. It runs the jars that `make jars` resolves from Maven Central.

Three ways to run it:
- owned (`start(owned=True)`, the default for tests): the broker gets SIGTERM when the
  thread that started it ends (Linux's PR_SET_PDEATHSIG follows the forking *thread*, not the
  process), so a crashed test run never leaves a broker behind; start an owned broker from a thread
  that lives as long as you need the broker, e.g. the main thread;
- shared (`with DevBroker().shared():`, the examples): every process that uses the broker holds a
  lease on it; a keeper process starts it and stops it once the last holder is gone (broker_keeper),
  so two examples at once share one broker and the first to finish leaves it to the other;
- detached (`streams-rt dev-broker start`): it runs until `stop`; owned and shared users reuse it
  and leave it running.
Each runs in a session of its own: Ctrl-C in the terminal that started it is for its user, who stops
what runs on the broker first.

Everything the broker and its storage tool write stays inside the broker directory, whatever
characters its path has (see broker_files). A `broker.json` file there records the running broker,
so a second `start` on the same directory reuses it instead of starting another; a file lock
serialises start and stop. A broker of the directory is also recognised by its command line, so one
that `broker.json` does not (or no longer) name is never forgotten: start and status refuse, stop
ends it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Set
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from streams_rt.kafka import broker_leases
from streams_rt.kafka.broker_files import (
    LOOPBACK,
    BrokerError,
    BrokerFiles,
    BrokerInfo,
    Quorum,
    UnreadableRecordError,
    check_directory,
    jvm_environment,
    log4j2_properties,
    new_cluster_id,
    read_record,
    server_properties,
    write_record,
)
from streams_rt.kafka.broker_process import brokers_of, die_with_parent, is_broker_of, terminate, wait_for_exit
from streams_rt.kafka.jvm import KAFKA_LIBS, find_java, kafka_classpath
from streams_rt.kafka.reachability import unanswered

__all__ = ["LOOPBACK", "BrokerError", "BrokerInfo", "DevBroker", "default_directory"]

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 90.0
_STOP_TIMEOUT_S = 60.0
_TAIL_LINES = 10  # per log file in a start-up error: enough for the cause, short of the config dump


def default_directory() -> Path:
    """`$STREAMS_RT_HOME/dev-broker`, else `.streams-rt/dev-broker` under the current directory."""
    home = os.environ.get("STREAMS_RT_HOME")
    return (Path(home) if home else Path.cwd() / ".streams-rt") / "dev-broker"


class DevBroker:
    """Launcher for one broker directory: format, start, find again, stop."""

    def __init__(
        self,
        directory: Path | str | None = None,
        port: int = 0,
        java: str | None = None,
        libs: Path = KAFKA_LIBS,
        heap: str = "512m",
        quorum: Quorum | None = None,
    ) -> None:
        """`quorum`: this broker is one node of a cluster (dev_cluster.py), on `port` and its
        controller port there; None: a cluster of its own."""
        # Absolute: the broker's command line names its server.properties, which identifies it in /proc.
        self.directory = (Path(directory) if directory else default_directory()).resolve()
        self.files = BrokerFiles.of(self.directory)
        self.port = port
        self.java = java
        self.libs = libs
        self.heap = heap
        self.quorum = quorum

    @property
    def log_file(self) -> Path:
        return self.files.server_log

    # ---- public API ------------------------------------------------------------------------
    def start(self, owned: bool = True) -> BrokerInfo:
        """Start the broker, or return the one already running on this directory (`reused=True`).

        An owned broker dies with the calling *thread* (see the module docstring). Raises BrokerError,
        before writing anything, for a directory Kafka cannot use; and when this directory's broker is
        alive but does not answer, or `broker.json` cannot be read or does not name it: a second JVM
        on the same data would fail, so it has to be stopped first."""
        launched = self.launch(owned)
        return launched if isinstance(launched, BrokerInfo) else launched.ready()

    def launch(self, owned: bool = True) -> BrokerInfo | Launched:
        """`start` without the wait: the running broker (`reused`), or the process just launched,
        whose `ready()` waits for it. A cluster launches all its nodes before waiting for any: a node
        answers only once a majority of the quorum runs. An owned broker dies with the thread that
        called this."""
        java, classpath = self._preflight()
        # The start lock stays held until `ready()` has recorded the broker: meanwhile `status` says
        # "starting" and `stop` waits.
        held = contextlib.ExitStack()
        held.enter_context(self._start_lock())
        try:
            running = self._running()
            if running is not None:
                log.info("reusing the Kafka broker already running at %s (pid %d)",
                         running.bootstrap_servers, running.pid)
                held.close()
                return running
            port, controller_port = self._choose_ports()
            self._write_configuration(port, controller_port)
            self._format_storage(java, classpath)
            return self._spawn(java, classpath, port, owned, held)
        except BaseException:
            held.close()
            raise

    def shared(self) -> contextlib.AbstractContextManager[BrokerInfo]:
        """The broker of this directory for the block's duration, shared with every other process that
        uses it: started (through a keeper process) unless it runs, and stopped after the block only if
        no other process holds it and no one started it by hand (`streams-rt dev-broker start`)."""
        return _Lease(self)

    def acquire(self) -> BrokerInfo:
        """Hold the broker (see `shared`, which pairs this with `release`); `reused` is True when it
        was running already. Raises BrokerError as `start` does, or with the keeper's log when the
        keeper could not start it."""
        self._preflight()
        with self._start_lock():
            broker_leases.take(self.files.leases)
            running = self._running()
            if running is not None:
                return running
            with open(self.files.keeper_log, "ab") as out:
                keeper = subprocess.Popen([sys.executable, "-m", "streams_rt.kafka.broker_keeper", str(self.directory),
                                           "--port", str(self.port)],
                                          stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True, env={**os.environ, "STREAMS_RT_KAFKA_LIBS":
                                                                       str(self.libs)})
        # The keeper takes the start lock to start the broker: wait outside it.
        deadline = time.monotonic() + _START_TIMEOUT_S + 30
        while time.monotonic() < deadline:
            info = self._read_record()
            if info is not None and is_broker_of(info.pid, self.files.server_properties) \
                    and _metadata_ok(info.bootstrap_servers, 2.0):
                return info
            if keeper.poll() is not None and keeper.returncode != 0:
                raise BrokerError(f"the Kafka broker's keeper could not start it (exit code {keeper.returncode}); "
                                  f"last lines of {self.files.keeper_log}:\n{_tail(self.files.keeper_log)}")
            time.sleep(0.2)
        raise BrokerError(f"the shared Kafka broker of {self.directory} did not come up within "
                          f"{_START_TIMEOUT_S + 30:.0f} s; see {self.files.keeper_log} and {self.log_file}")

    def release(self) -> bool:
        """This process no longer holds the broker. Returns True when it was the last holder of a shared
        broker, which is then stopped (by its keeper; waited for here, so nothing outlives the call)."""
        with self._start_lock():
            broker_leases.drop(self.files.leases)
            if broker_leases.holders(self.files.leases):
                return False
            info = self._read_record()
        pids = brokers_of(self.files.server_properties)
        if info is None or not pids or not self._kept(info.pid):
            return False  # a broker started by hand, or none: not ours to stop
        for pid in pids:
            wait_for_exit(pid, _STOP_TIMEOUT_S)
        return True

    def stop_if_unheld(self) -> bool:
        """Stop the broker if no process holds a lease on it (the keeper asks this). Under the start
        lock: a holder arriving meanwhile finds it either running or stopped, then starts another."""
        with self._start_lock():
            if broker_leases.holders(self.files.leases):
                return False
            self._stop_all()
            return True

    def status(self) -> BrokerInfo | None:
        """The broker of this directory, or None when none runs (a stale `broker.json` stays until the
        next start or stop replaces or removes it: status only reads).

        A broker whose process is alive but misses a 5 s metadata probe (hung, SIGSTOPped) comes back
        with `answering=False` and stays recorded, so that `stop` can still end it; one that a start
        under way has not recorded yet comes back with `starting=True`. `holders` are the processes
        that share it. Raises BrokerError when `broker.json` cannot be read, or when a broker of this
        directory runs that it does not name and no start is under way."""
        return self._status(start_in_progress=self._start_in_progress())

    def _status(self, start_in_progress: bool) -> BrokerInfo | None:
        holders = tuple(broker_leases.holders(self.files.leases))
        info = self._read_record()
        if info is not None and is_broker_of(info.pid, self.files.server_properties):
            answering = _metadata_ok(info.bootstrap_servers, 5.0)
            return replace(info, answering=answering, holders=holders)
        unrecorded = brokers_of(self.files.server_properties)
        if unrecorded and start_in_progress:
            return BrokerInfo(pid=unrecorded[0], port=self._read_ports().get("port", 0) or 1,
                              directory=str(self.directory), log_file=str(self.log_file), startup_seconds=0.0,
                              answering=False, starting=True, holders=holders)
        if unrecorded:
            raise BrokerError(f"a Kafka broker of {self.directory} runs as pid {_pid_list(unrecorded)} but "
                              f"{self.files.record} does not record it; `streams-rt dev-broker stop` ends it")
        return None

    def stop(self) -> bool:
        """Stop every broker of this directory with SIGTERM (SIGKILL after 60 s), recorded or not; waits
        for a start in progress. Returns False when none was running. `broker.json` is removed only
        once no broker of the directory runs any more; an unreadable one is an error and stays."""
        if not self.directory.is_dir():
            return False
        with self._start_lock():
            return self._stop_all()

    # ---- steps -----------------------------------------------------------------------------
    def _preflight(self) -> tuple[str, str]:
        """Java and the classpath, once the port and the directory are known to be usable; raises
        BrokerError or JvmSetupError before anything is written. Creates the directory."""
        _validate_port(self.port)
        check_directory(self.directory)
        java = find_java(self.java)
        classpath = kafka_classpath(self.libs)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.files.logs.mkdir(exist_ok=True)
        return java, classpath

    def _running(self) -> BrokerInfo | None:
        """Under the start lock: the running broker (`reused`), None when none runs; BrokerError for
        one that does not answer, which a second JVM on the same data would fail beside."""
        running = self._status(start_in_progress=False)
        if running is not None and not running.answering:
            raise BrokerError(f"the Kafka broker of {self.directory} (pid {running.pid}) is running but does "
                              f"not answer on {running.bootstrap_servers}; stop it first "
                              f"(`streams-rt dev-broker stop`), see {self.log_file}")
        return replace(running, reused=True) if running is not None else None

    def _stop_all(self) -> bool:
        """Under the start lock: end every broker of the directory; False when none ran."""
        info = self._read_record()
        pids = brokers_of(self.files.server_properties)
        for pid in pids:
            if not terminate(pid, _STOP_TIMEOUT_S):
                raise BrokerError(f"the Kafka broker of {self.directory} (pid {pid}) still runs after SIGKILL")
        self.files.record.unlink(missing_ok=True)
        if pids:
            log.info("stopped the Kafka broker%s (pid %s)",
                     f" at {info.bootstrap_servers}" if info else "", _pid_list(pids))
        return bool(pids)

    def _kept(self, broker_pid: int) -> bool:
        """The broker's parent is a keeper (a shared broker), not a user's detached start."""
        try:
            parent = int(Path(f"/proc/{broker_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            return False
        return b"streams_rt.kafka.broker_keeper" in cmdline

    def _start_in_progress(self) -> bool:
        """Another process holds the start lock: a start (or a stop) is under way."""
        if not self.files.start_lock.exists():
            return False
        with open(self.files.start_lock, "a") as lock_file:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock_file, fcntl.LOCK_UN)
        return False

    @contextmanager
    def _start_lock(self) -> Iterator[None]:
        with open(self.files.start_lock, "w") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def _read_record(self) -> BrokerInfo | None:
        """The recorded broker; an unreadable record raises, saying whether a broker of this directory
        still runs (and how to end it) or the file can simply go."""
        try:
            return read_record(self.files.record)
        except UnreadableRecordError as error:
            running = brokers_of(self.files.server_properties)
            advice = (f"the broker of this directory still runs as pid {_pid_list(running)}: delete the file, "
                      "then `streams-rt dev-broker stop` ends it" if running
                      else "no broker of this directory runs, so the file can be deleted")
            raise UnreadableRecordError(f"{error}; {advice}") from None

    def _choose_ports(self) -> tuple[int, int]:
        """The requested port, else the ports of the previous run if free (so a restarted broker keeps
        its address), else fresh free ports."""
        previous = self._read_ports()
        if self.quorum is not None:  # the cluster chose both, once, for the quorum's voters
            voter_port = dict(self.quorum.voters)[self.quorum.node_id]
            self.files.ports.write_text(json.dumps({"port": self.port, "controller_port": voter_port}))
            return self.port, voter_port
        if self.port:
            if not _port_free(self.port):
                raise BrokerError(f"port {self.port} on {LOOPBACK} is already in use;"
                                  " choose another or use 0 for a free port")
            port = self.port
        elif previous.get("port") and _port_free(previous["port"]):
            port = previous["port"]
        else:
            port = _free_port()
        controller_port = previous.get("controller_port")
        if not controller_port or controller_port == port or not _port_free(controller_port):
            controller_port = _free_port(exclude={port})
        self.files.ports.write_text(json.dumps({"port": port, "controller_port": controller_port}))
        return port, controller_port

    def _write_configuration(self, port: int, controller_port: int) -> None:
        for directory in (self.files.logs, self.files.java_tmp):
            directory.mkdir(exist_ok=True)
        self.files.server_properties.write_text(server_properties(self.files, port, controller_port, self.quorum))
        self.files.log4j2_properties.write_text(log4j2_properties(self.files))

    def _jvm_options(self) -> list[str]:
        """Options both JVMs share. The log4j2 location is a file: URI because log4j2 splits the
        plain form at commas and reads `#`, `%` and `${` in it; no perf data in /tmp/hsperfdata_*."""
        return ["-XX:-UsePerfData", f"-Djava.io.tmpdir={self.files.java_tmp}",
                f"-Dlog4j2.configurationFile={self.files.log4j2_properties.as_uri()}"]

    def _format_storage(self, java: str, classpath: str) -> None:
        """Format KRaft storage once; a formatted directory keeps its data across restarts (checked here
        rather than with --ignore-formatted, which would cost a JVM start on every restart)."""
        if (self.files.data / "meta.properties").exists():
            return
        cluster_id = self.quorum.cluster_id if self.quorum is not None else new_cluster_id()
        result = subprocess.run(
            [java, *self._jvm_options(), "-cp", classpath, "kafka.tools.StorageTool", "format",
             "-t", cluster_id, "-c", str(self.files.server_properties)],
            capture_output=True, text=True, timeout=120, cwd=self.directory, env=jvm_environment(),
        )
        if result.returncode != 0:
            raise BrokerError(f"formatting KRaft storage in {self.files.data} failed:\n"
                              f"{result.stdout}{result.stderr}")

    def _spawn(self, java: str, classpath: str, port: int, owned: bool, held: contextlib.ExitStack) -> Launched:
        command = [
            java, f"-Xms{self.heap}", f"-Xmx{self.heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true", *self._jvm_options(), "-cp", classpath,
            "kafka.Kafka", str(self.files.server_properties),
        ]
        began = time.monotonic()
        with open(self.files.console_log, "ab") as console:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
                cwd=self.directory, env=jvm_environment(), start_new_session=True,
                preexec_fn=die_with_parent(os.getpid()) if owned else None,
            )
        return Launched(self, process, port, began, held)

    def _await(self, process: subprocess.Popen[bytes], port: int, began: float) -> BrokerInfo:
        # Until broker.json records it, only the command line finds this JVM: any failure or interrupt
        # (Ctrl-C included) before then must end it here.
        try:
            info = self._wait_until_ready(process, port, began)
            write_record(self.files.record, info)
        except BaseException:
            process.kill()
            process.wait()
            raise
        log.info("Kafka broker ready at %s in %.1f s (pid %d, log %s)",
                 info.bootstrap_servers, info.startup_seconds, info.pid, self.log_file)
        return info

    def _wait_until_ready(self, process: subprocess.Popen[bytes], port: int, began: float) -> BrokerInfo:
        bootstrap = f"{LOOPBACK}:{port}"
        while time.monotonic() < began + _START_TIMEOUT_S:
            if process.poll() is not None:
                raise BrokerError(f"the Kafka broker exited with code {process.returncode} during start-up; "
                                  f"last lines of {self.files.console_log} and {self.log_file}:\n{self._log_tail()}")
            if _metadata_ok(bootstrap, 2.0):
                return BrokerInfo(pid=process.pid, port=port, directory=str(self.directory),
                                  log_file=str(self.log_file),
                                  startup_seconds=round(time.monotonic() - began, 2))
            time.sleep(0.2)
        raise BrokerError(f"the Kafka broker did not answer a metadata request on {bootstrap} within "
                          f"{_START_TIMEOUT_S:.0f} s; see {self.log_file}:\n{self._log_tail()}")

    def _read_ports(self) -> dict[str, int]:
        """The previous run's ports; an unreadable file only costs the reuse of its ports."""
        try:
            ports = json.loads(self.files.ports.read_text())
            if not isinstance(ports, dict):
                raise ValueError(f"expected a JSON object, got {ports!r}")
            return {key: value for key, value in ports.items()
                    if key in ("port", "controller_port") and isinstance(value, int) and 0 < value <= 65535}
        except FileNotFoundError:
            return {}
        except ValueError as error:
            log.warning("ignoring unreadable %s: %s", self.files.ports, error)
            return {}

    def _log_tail(self) -> str:
        return "\n".join(filter(None, (_tail(self.files.console_log), _tail(self.log_file))))


class _Lease(contextlib.AbstractContextManager[BrokerInfo]):
    """DevBroker.shared()'s context: acquire on entry, release on exit."""

    def __init__(self, broker: DevBroker) -> None:
        self.broker = broker

    def __enter__(self) -> BrokerInfo:
        return self.broker.acquire()

    def __exit__(self, *exc_info: object) -> None:
        if self.broker.release():
            log.info("stopped the shared Kafka broker: no other process uses it")


def _tail(path: Path) -> str:
    """The last lines of a log file for an error message ('' when there is none)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-_TAIL_LINES:])
    except OSError:
        return ""


@dataclass(frozen=True)
class Launched:
    """A broker process just launched: `ready()` waits until it answers and records it."""

    broker: DevBroker
    process: subprocess.Popen[bytes]
    port: int
    began: float
    held: contextlib.ExitStack  # the directory's start lock, released once the broker is recorded (or failed)

    def ready(self) -> BrokerInfo:
        try:
            return self.broker._await(self.process, self.port, self.began)
        finally:
            self.held.close()


def _pid_list(pids: list[int]) -> str:
    return ", ".join(map(str, pids))


def _validate_port(port: int) -> None:
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise BrokerError(f"port must be 0 (any free port) or 1-65535, not {port!r}")


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _free_port(exclude: Set[int] = frozenset()) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((LOOPBACK, 0))
            port: int = probe.getsockname()[1]
        if port not in exclude:
            return port


def _metadata_ok(bootstrap: str, timeout_s: float) -> bool:
    """True when the broker answers a metadata request (quietly: librdkafka logs every refused
    connection while the broker starts, and those are expected)."""
    return unanswered(bootstrap, timeout_s) is None
