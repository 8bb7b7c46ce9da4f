"""A real single-node Apache Kafka broker (KRaft, combined broker+controller) on loopback, for
development, demos and tests. It runs the jars that `make jars` resolves from Maven Central.

Two ways to run it:
- owned (`start(owned=True)`, the default for tests and the demo): the broker gets SIGTERM when the
  thread that started it ends (Linux's PR_SET_PDEATHSIG follows the forking *thread*, not the
  process), so a crashed test run never leaves a broker behind; start an owned broker from a thread
  that lives as long as you need the broker, e.g. the main thread;
- detached (`streams-rt dev-broker start`): it runs in its own session until `stop`.

A `broker.json` file in the broker directory records the running broker, so a second `start` on the
same directory reuses it instead of starting another; a file lock serialises start and stop.
"""

from __future__ import annotations

import base64
import ctypes
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from confluent_kafka.admin import AdminClient

from streams_rt.kafka.jvm import KAFKA_LIBS, find_java, kafka_classpath

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
_START_TIMEOUT_S = 90.0
_STOP_TIMEOUT_S = 60.0
_TAIL_LINES = 10  # per log file in a start-up error: enough for the cause, short of the config dump
_PR_SET_PDEATHSIG = 1
# Resolved once here: dlopen/dlsym in the forked child of a multi-threaded process can deadlock on
# the loader lock, so the preexec hook only calls the already-resolved function.
_prctl = ctypes.CDLL(None, use_errno=True).prctl


class BrokerError(RuntimeError):
    """The broker could not be started, reached or stopped; the message says why."""


@dataclass(frozen=True)
class BrokerInfo:
    """A running broker, as recorded in `broker.json` (`answering` and `reused` are not recorded:
    they describe one status or start call)."""

    pid: int
    port: int
    directory: str
    log_file: str
    startup_seconds: float
    answering: bool = field(default=True, compare=False)  # False: alive but missed the metadata probe
    reused: bool = field(default=False, compare=False)  # True: start() found it already running

    @property
    def bootstrap_servers(self) -> str:
        return f"{LOOPBACK}:{self.port}"


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
    ) -> None:
        # Absolute: the JVM runs with cwd=directory, and its command line identifies it in /proc.
        self.directory = (Path(directory) if directory else default_directory()).resolve()
        self.port = port
        self.java = java
        self.libs = libs
        self.heap = heap

    # ---- paths -----------------------------------------------------------------------------
    @property
    def _state_file(self) -> Path:
        return self.directory / "broker.json"

    @property
    def _ports_file(self) -> Path:
        return self.directory / "ports.json"

    @property
    def _properties_file(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_file(self) -> Path:
        return self.directory / "logs" / "server.log"

    @property
    def _console_file(self) -> Path:
        return self.directory / "logs" / "console.log"

    # ---- public API ------------------------------------------------------------------------
    def start(self, owned: bool = True) -> BrokerInfo:
        """Start the broker, or return the one already running on this directory (`reused=True`).

        An owned broker dies with the calling *thread* (see the module docstring). Raises BrokerError
        when this directory's broker process is alive but does not answer: a second JVM on the same
        data would fail, so it has to be stopped first."""
        _validate_port(self.port)
        java = find_java(self.java)
        classpath = kafka_classpath(self.libs)
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._start_lock():
            running = self.status()
            if running is not None and not running.answering:
                raise BrokerError(f"the Kafka broker of {self.directory} (pid {running.pid}) is running but does "
                                  f"not answer on {running.bootstrap_servers}; stop it first "
                                  f"(`streams-rt dev-broker stop`), see {self.log_file}")
            if running is not None:
                log.info("reusing the Kafka broker already running at %s (pid %d)",
                         running.bootstrap_servers, running.pid)
                return replace(running, reused=True)
            port, controller_port = self._choose_ports()
            self._write_configuration(port, controller_port)
            self._format_storage(java, classpath)
            return self._launch(java, classpath, port, owned)

    def status(self) -> BrokerInfo | None:
        """The broker of this directory, or None when none runs (a stale `broker.json` is removed).

        A broker whose process is alive but misses a 5 s metadata probe (hung, SIGSTOPped) comes back
        with `answering=False` and stays recorded, so that `stop` can still end it."""
        info = self._read_state()
        if info is None:
            return None
        if not _is_our_broker(info.pid, self._properties_file):
            self._state_file.unlink(missing_ok=True)
            return None
        if not _metadata_ok(info.bootstrap_servers, 5.0):
            return replace(info, answering=False)
        return info

    def stop(self) -> bool:
        """Stop the broker of this directory with SIGTERM (SIGKILL after 60 s); waits for a start in
        progress. Returns False when no broker was running."""
        if not self.directory.is_dir():
            return False
        with self._start_lock():
            info = self._read_state()
            self._state_file.unlink(missing_ok=True)
            if info is None or not _is_our_broker(info.pid, self._properties_file):
                return False
            try:
                os.kill(info.pid, signal.SIGTERM)
                if not _wait_for_exit(info.pid, _STOP_TIMEOUT_S):
                    log.warning("broker pid %d did not stop within %.0f s of SIGTERM; sending SIGKILL",
                                info.pid, _STOP_TIMEOUT_S)
                    os.kill(info.pid, signal.SIGKILL)
                    _wait_for_exit(info.pid, 10.0)
            except ProcessLookupError:  # it exited between the check and the signal: stopped all the same
                pass
        log.info("stopped the Kafka broker at %s (pid %d)", info.bootstrap_servers, info.pid)
        return True

    # ---- steps -----------------------------------------------------------------------------
    @contextmanager
    def _start_lock(self) -> Iterator[None]:
        with open(self.directory / ".start.lock", "w") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def _choose_ports(self) -> tuple[int, int]:
        """The requested port, else the ports of the previous run if free (so a restarted broker keeps
        its address), else fresh free ports."""
        previous = self._read_ports()
        if self.port:
            if not _port_free(self.port):
                raise BrokerError(f"port {self.port} on {LOOPBACK} is already in use; choose another or use 0 for a free port")
            port = self.port
        elif previous.get("port") and _port_free(previous["port"]):
            port = previous["port"]
        else:
            port = _free_port()
        controller_port = previous.get("controller_port")
        if not controller_port or controller_port == port or not _port_free(controller_port):
            controller_port = _free_port(exclude={port})
        self._ports_file.write_text(json.dumps({"port": port, "controller_port": controller_port}))
        return port, controller_port

    def _write_configuration(self, port: int, controller_port: int) -> None:
        data_dir = self.directory / "data"
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{LOOPBACK}:{controller_port}",
            "listeners": f"PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        self._properties_file.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        (self.directory / "log4j2.properties").write_text(
            "status = warn\n"
            "appender.file.type = File\n"
            "appender.file.name = file\n"
            f"appender.file.fileName = {self.log_file}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.file.ref = file\n"
            "logger.state.name = state.change.logger\n"
            "logger.state.level = WARN\n"
        )

    def _format_storage(self, java: str, classpath: str) -> None:
        """Format KRaft storage once; a formatted directory keeps its data across restarts (checked here
        rather than with --ignore-formatted, which would cost a JVM start on every restart)."""
        if (self.directory / "data" / "meta.properties").exists():
            return
        cluster_id = _new_cluster_id()
        result = subprocess.run(
            [java, "-cp", classpath, f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
             "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self._properties_file)],
            capture_output=True, text=True, timeout=120,
        )
        if result.returncode != 0:
            raise BrokerError(f"formatting KRaft storage in {self.directory / 'data'} failed:\n"
                              f"{result.stdout}{result.stderr}")

    def _launch(self, java: str, classpath: str, port: int, owned: bool) -> BrokerInfo:
        command = [
            java, f"-Xms{self.heap}", f"-Xmx{self.heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.log_file.parent}", "-cp", classpath,
            "kafka.Kafka", str(self._properties_file),
        ]
        began = time.monotonic()
        with open(self._console_file, "ab") as console:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
                cwd=self.directory, start_new_session=not owned,
                preexec_fn=_die_with_parent(os.getpid()) if owned else None,
            )
        # Until broker.json records it, nothing else can find this JVM: any failure or interrupt
        # (Ctrl-C included) before then must end it here.
        try:
            info = self._wait_until_ready(process, port, began)
            self._state_file.write_text(json.dumps(_record(info), indent=2))
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
                                  f"last lines of {self._console_file} and {self.log_file}:\n{self._log_tail()}")
            if _metadata_ok(bootstrap, 2.0):
                return BrokerInfo(pid=process.pid, port=port, directory=str(self.directory),
                                  log_file=str(self.log_file),
                                  startup_seconds=round(time.monotonic() - began, 2))
            time.sleep(0.2)
        raise BrokerError(f"the Kafka broker did not answer a metadata request on {bootstrap} within "
                          f"{_START_TIMEOUT_S:.0f} s; see {self.log_file}:\n{self._log_tail()}")

    def _read_state(self) -> BrokerInfo | None:
        """The recorded broker; keys this version does not know (older files had `controller_port` and
        `started_at`) are ignored, and an unreadable file counts as no record."""
        try:
            record = json.loads(self._state_file.read_text())
            return BrokerInfo(**{key: record[key] for key in _RECORDED_FIELDS})
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, KeyError) as error:
            log.warning("ignoring unreadable %s: %r", self._state_file, error)
            return None

    def _read_ports(self) -> dict[str, int]:
        """The previous run's ports; an unreadable file only costs the reuse of its ports."""
        try:
            ports = json.loads(self._ports_file.read_text())
            if not isinstance(ports, dict):
                raise ValueError(f"expected a JSON object, got {ports!r}")
            return {key: value for key, value in ports.items()
                    if key in ("port", "controller_port") and isinstance(value, int) and 0 < value <= 65535}
        except FileNotFoundError:
            return {}
        except ValueError as error:
            log.warning("ignoring unreadable %s: %s", self._ports_file, error)
            return {}

    def _log_tail(self) -> str:
        tails = []
        for path in (self._console_file, self.log_file):
            if path.exists():
                tails.extend(path.read_text(errors="replace").splitlines()[-_TAIL_LINES:])
        return "\n".join(tails)


_RECORDED_FIELDS = ("pid", "port", "directory", "log_file", "startup_seconds")


def _record(info: BrokerInfo) -> dict[str, object]:
    """What `broker.json` keeps of `info`."""
    return {key: getattr(info, key) for key in _RECORDED_FIELDS}


def _new_cluster_id() -> str:
    """A random KRaft cluster id: URL-safe base64 of a UUID. Like Kafka's Uuid.randomUuid, never one that
    starts with '-', which the storage tool's argument parser would read as an option (1 in 64 ids)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


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


def _free_port(exclude: set[int] = frozenset()) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((LOOPBACK, 0))
            port = probe.getsockname()[1]
        if port not in exclude:
            return port


def _metadata_ok(bootstrap: str, timeout_s: float) -> bool:
    """True when the broker answers an AdminClient metadata request."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 1000,
                         "log_level": 0, "logger": _SILENT})
    try:
        admin.list_topics(timeout=timeout_s)
        return True
    except Exception:  # noqa: BLE001 - any failure means "not ready yet"; start-up retries until its deadline
        return False


def _silent_logger() -> logging.Logger:
    """librdkafka logs every refused connection while the broker starts; those are expected."""
    logger = logging.getLogger("streams_rt.kafka.dev_broker.probe")
    logger.setLevel(logging.CRITICAL + 1)
    logger.propagate = False
    return logger


_SILENT = _silent_logger()


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """A preexec hook: ask Linux to SIGTERM the broker when its parent dies (PR_SET_PDEATHSIG). Linux
    sends it when the parent *thread* that forked exits, even if the rest of the process lives on."""

    def hook() -> None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return hook


def _is_our_broker(pid: int, properties_file: Path) -> bool:
    """The pid is alive and is a Kafka broker started with this directory's configuration."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"kafka.Kafka" in cmdline and str(properties_file).encode() in cmdline


def _wait_for_exit(pid: int, timeout_s: float) -> bool:
    """Wait for `pid` to end: reap it if it is our child, else watch /proc (a zombie counts as ended)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            try:
                if ") Z " in Path(f"/proc/{pid}/stat").read_text(errors="replace"):
                    return True
            except OSError:  # gone
                return True
        time.sleep(0.1)
    return False
