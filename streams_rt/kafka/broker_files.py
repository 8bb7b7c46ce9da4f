"""What a dev broker directory holds, and how each file is written and read back: the checks a
directory must pass before anything is written, the configuration files (escaped, so that the broker
keeps everything inside the directory whatever characters its path has) and the `broker.json`
record of the running broker (read strictly: a record that cannot be trusted is an error, never
"no broker")."""

from __future__ import annotations

import base64
import json
import math
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

from streams_rt.atomic_file import atomic_write_bytes
from streams_rt.kafka.java_properties import format_properties

LOOPBACK = "127.0.0.1"
_PID_MAX_LIMIT = 1 << 22  # Linux never hands out a larger process id (PID_MAX_LIMIT on 64-bit)


class BrokerError(RuntimeError):
    """The broker could not be started, reached or stopped; the message says why."""


class UnusableDirectoryError(BrokerError):
    """Kafka or Java cannot keep a broker in this directory; refused before anything is written."""


class UnreadableRecordError(BrokerError):
    """`broker.json` exists but does not describe a broker; the message says what is wrong with it."""


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
    starting: bool = field(default=False, compare=False)  # True: a start is under way, not finished
    holders: tuple[int, ...] = field(default=(), compare=False)  # processes sharing it (DevBroker.shared)

    @property
    def bootstrap_servers(self) -> str:
        return f"{LOOPBACK}:{self.port}"


@dataclass(frozen=True)
class BrokerFiles:
    """The paths inside one (absolute) broker directory; `BrokerFiles.of(directory)` builds them."""

    directory: Path
    record: Path  # broker.json: the running broker
    ports: Path  # ports.json: the last start's ports, reused by the next
    server_properties: Path
    log4j2_properties: Path
    start_lock: Path
    data: Path  # log.dirs: KRaft metadata and topic logs
    logs: Path
    server_log: Path
    console_log: Path  # the JVM's stdout and stderr
    java_tmp: Path  # java.io.tmpdir of the JVMs: compression codecs unpack their native libraries there
    leases: Path  # one file per process sharing the broker (broker_leases)
    keeper_log: Path  # the log of a shared broker's keeper process (broker_keeper)

    @classmethod
    def of(cls, directory: Path) -> BrokerFiles:
        logs = directory / "logs"
        return cls(directory=directory, record=directory / "broker.json", ports=directory / "ports.json",
                   server_properties=directory / "server.properties",
                   log4j2_properties=directory / "log4j2.properties", start_lock=directory / ".start.lock",
                   data=directory / "data", logs=logs, server_log=logs / "server.log",
                   console_log=logs / "console.log", java_tmp=directory / "tmp", leases=directory / "leases",
                   keeper_log=logs / "keeper.log")


def check_directory(directory: Path) -> None:
    """Refuse a directory the broker could not keep its files in (raises UnusableDirectoryError).

    Java needs the path's bytes to be UTF-8 (the JVMs run with LC_ALL=C.UTF-8), and Kafka splits
    `log.dirs` at commas. Everything else is escaped where it is written."""
    try:
        text = os.fsencode(directory).decode("utf-8")
    except UnicodeDecodeError:
        raise UnusableDirectoryError(f"Java cannot name the broker directory {os.fsencode(directory)!r}: "
                                     "its path is not valid UTF-8; choose another directory") from None
    if "," in text:
        raise UnusableDirectoryError(f"Kafka cannot keep its data under {text}: log.dirs is a comma-separated "
                                     "list, so the broker directory's path must not contain a comma; "
                                     "choose another directory")


def jvm_environment() -> dict[str, str]:
    """The JVMs' environment: Java turns file names into bytes with the locale's encoding, so a
    non-UTF-8 (or C) locale would write a non-ASCII path's files somewhere else."""
    return {**os.environ, "LC_ALL": "C.UTF-8"}


@dataclass(frozen=True)
class Quorum:
    """One node's place in a KRaft cluster of several combined broker+controller nodes on loopback:
    every node is a voter; the broker's internal topics get `replicas` replicas (3 nodes: 3, and
    `min.insync.replicas` 2, Kafka's production advice, as the broker default for every topic)."""

    node_id: int
    voters: tuple[tuple[int, int], ...]  # (node id, controller port) of every node
    cluster_id: str

    @property
    def replicas(self) -> int:
        return len(self.voters)

    @property
    def min_insync(self) -> int:
        return min(2, self.replicas)


def server_properties(files: BrokerFiles, port: int, controller_port: int, quorum: Quorum | None = None) -> str:
    """Kafka's configuration: one combined KRaft broker and controller on loopback, alone or a node
    of `quorum`."""
    node_id, replicas, min_insync = (quorum.node_id, quorum.replicas, quorum.min_insync) if quorum else (1, 1, 1)
    voters = (",".join(f"{n}@{LOOPBACK}:{p}" for n, p in quorum.voters) if quorum
              else f"1@{LOOPBACK}:{controller_port}")
    return format_properties({
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(files.data),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": str(replicas),
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": str(min_insync),
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": str(replicas),
        "share.coordinator.state.topic.min.isr": str(min_insync),
        "default.replication.factor": str(replicas),
        "min.insync.replicas": str(min_insync),
        "group.initial.rebalance.delay.ms": "0",
        # No time-based retention: tests and examples write records with made-up timestamps (1970's),
        # which the default 7 days would delete at the broker's next retention check (every 5 min),
        # from under a running test; a development broker keeps what it was given.
        "log.retention.ms": "-1",
    })


def log4j2_properties(files: BrokerFiles) -> str:
    """log4j2's configuration: everything into `logs/server.log`. log4j2 substitutes `${...}` in
    values; `$${` is its escape for a literal `${`."""
    return format_properties({
        "status": "warn",
        "appender.file.type": "File",
        "appender.file.name": "file",
        "appender.file.fileName": str(files.server_log).replace("${", "$${"),
        "appender.file.layout.type": "PatternLayout",
        "appender.file.layout.pattern": "[%d] %p %m (%c)%n",
        "rootLogger.level": "INFO",
        "rootLogger.appenderRef.file.ref": "file",
        "logger.state.name": "state.change.logger",
        "logger.state.level": "WARN",
    })


def new_cluster_id() -> str:
    """A random KRaft cluster id: URL-safe base64 of a UUID. Like Kafka's Uuid.randomUuid, never one that
    starts with '-', which the storage tool's argument parser would read as an option (1 in 64 ids)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


_RECORDED_FIELDS = ("pid", "port", "directory", "log_file", "startup_seconds")


def write_record(path: Path, info: BrokerInfo) -> None:
    """Record `info` in `path`, atomically: a crash never leaves half a record."""
    record = {key: getattr(info, key) for key in _RECORDED_FIELDS}
    atomic_write_bytes(path, json.dumps(record, indent=2).encode())


def read_record(path: Path) -> BrokerInfo | None:
    """The broker recorded in `path`, or None when there is no such file. Keys this version does not
    know (older files had `controller_port` and `started_at`) are ignored; anything else that is not a
    valid record raises UnreadableRecordError."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UnreadableRecordError(f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UnreadableRecordError(f"{path} is not UTF-8 text") from None
    try:
        record = json.loads(text)
    except ValueError as error:
        raise UnreadableRecordError(f"{path} is not JSON ({error})") from None
    if not isinstance(record, dict):
        raise UnreadableRecordError(f"{path} holds {_short(record)}, not a JSON object")
    missing = [key for key in _RECORDED_FIELDS if key not in record]
    if missing:
        raise UnreadableRecordError(f"{path} lacks {', '.join(missing)}")
    return _parse_record(path, record)


def _parse_record(path: Path, record: dict[str, object]) -> BrokerInfo:
    """The record's broker; a pid that is not a process id must never be signalled (0 and negative
    pids name process groups), so every field is checked."""
    pid, port, seconds = record["pid"], record["port"], record["startup_seconds"]
    directory, log_file = record["directory"], record["log_file"]
    if not _is_int(pid) or not 0 < pid < _PID_MAX_LIMIT:
        raise UnreadableRecordError(f"{path}: pid must be a process id (1-{_PID_MAX_LIMIT - 1}), not {_short(pid)}")
    if not _is_int(port) or not 0 < port <= 65535:
        raise UnreadableRecordError(f"{path}: port must be 1-65535, not {_short(port)}")
    if not isinstance(directory, str) or not isinstance(log_file, str):
        raise UnreadableRecordError(f"{path}: directory and log_file must be strings, not "
                                    f"{_short(directory)} and {_short(log_file)}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
        raise UnreadableRecordError(f"{path}: startup_seconds must be a number of seconds, not {_short(seconds)}")
    return BrokerInfo(pid=pid, port=port, directory=directory, log_file=log_file, startup_seconds=float(seconds))


def _is_int(value: object) -> TypeGuard[int]:
    """A JSON integer (Python's bool is an int, JSON's true is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _short(value: object) -> str:
    """`value` for an error line: repr (one line), cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
