"""Python side of the Java harness: one long-lived JVM running Kafka's own SubscriptionInfo and
AssignmentInfo (tests/protocol/java/ProtocolHarness.java), spoken to in JSON lines; bytes as hex.
Used by the compatibility tests and by bench/protocol.py."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from streams_rt.kafka.jvm import REPO_ROOT, compile_java, find_java
from streams_rt.protocol import AssignmentInfo, SubscriptionInfo, TaskId

JAVA_SOURCE = Path(__file__).with_name("java") / "ProtocolHarness.java"
JSON_LINES = REPO_ROOT / "tests" / "java" / "JsonLines.java"  # the request loop every harness shares
BUILD_DIR = REPO_ROOT / "build" / "protocol-harness"
# Hypothesis settings of the compatibility tests: every example is a JVM round trip, so few and no deadline.
COMPAT = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class JavaHarnessError(RuntimeError):
    """The harness JVM died or answered something that is not a JSON line."""


class KafkaJava:
    """A running Java harness (ProtocolHarness unless told another source, whose class has the file's
    name); `call` sends one request and returns its decoded answer."""

    def __init__(self, source: Path = JAVA_SOURCE, build_dir: Path = BUILD_DIR,
                 extra_sources: Sequence[Path] = ()) -> None:
        classpath = compile_java([source, JSON_LINES, *extra_sources], build_dir)
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen(
            [find_java(), "-Xss8m", "-cp", classpath, source.stem],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )

    def call(self, op: str, **request: Any) -> dict[str, Any]:
        """Answer of the harness; raises JavaHarnessError if the JVM is gone."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(json.dumps({"op": op, **request}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise JavaHarnessError(f"the harness JVM is gone: {exc}\n{self._stderr_text()}") from exc
        if not line:
            raise JavaHarnessError(f"the harness JVM exited ({self._proc.poll()}):\n{self._stderr_text()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ok(self, op: str, **request: Any) -> dict[str, Any]:
        """Like `call`, but a Java exception is a harness error."""
        answer = self.call(op, **request)
        if not answer["ok"]:
            raise JavaHarnessError(f"{op} failed in Kafka's code: {answer['error']}")
        return answer

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-4000:]

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._stderr.close()


def task_json(task: Any) -> list[Any]:
    return [task.subtopology, task.partition, task.topology_name]


def task_from_json(entry: list[Any]) -> TaskId:
    """Inverse of `task_json`, for the harness's answers."""
    return TaskId(entry[0], entry[1], entry[2])


def subscription_request(info: SubscriptionInfo) -> dict[str, Any]:
    """The arguments of Kafka's SubscriptionInfo constructor for the same content, in the same order."""
    return {
        "version": info.version,
        "latest": info.latest_supported_version,
        "processId": str(info.process_id),
        "endpoint": info.user_endpoint,
        "sums": [[task_json(t), s] for t, s in info.task_offset_sums.items()],
        "unique": info.unique_field,
        "error": int(info.error_code),
        "tags": [[k, v] for k, v in info.client_tags.items()],
    }


def _host_map_json(host_map: Any) -> list[Any]:
    return [[[h.host, h.port], [[tp.topic, tp.partition] for tp in tps]] for h, tps in host_map.items()]


def assignment_request(info: AssignmentInfo) -> dict[str, Any]:
    """The arguments of Kafka's AssignmentInfo constructor for the same content, in the same order."""
    return {
        "version": info.version,
        "commonly": info.commonly_supported_version,
        "active": [task_json(t) for t in info.active_tasks],
        "standby": [[task_json(t), [[tp.topic, tp.partition] for tp in tps]] for t, tps in info.standby_tasks.items()],
        "byHost": _host_map_json(info.partitions_by_host),
        "standbyByHost": _host_map_json(info.standby_partitions_by_host),
        "error": int(info.error_code),
        "nextRebalance": info.next_rebalance_ms,
    }
