"""Fixtures of the state tests: a fresh application (id, state.dir, config) per test on the session's
real broker, and child processes that are always reaped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.jvm import REPO_ROOT
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state import EXACTLY_ONCE_V2, StateConfig, StateDirectory, StoreSpec, TaskState
from streams_rt.state.task_state import WriterFactory


@pytest.fixture
def app_id() -> str:
    return f"state-test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def eos_config(tmp_path: Path, kafka_broker: BrokerInfo, app_id: str) -> StateConfig:
    return StateConfig(
        application_id=app_id,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        state_dir=tmp_path / "state",
        processing_guarantee=EXACTLY_ONCE_V2,
    )


@pytest.fixture
def state_directory(eos_config: StateConfig) -> Iterator[StateDirectory]:
    directory = eos_config.open_state_directory()
    yield directory
    directory.close()


class Children:
    """Starts `tests/state/child.py` commands as real OS processes; kills leftovers at teardown."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> subprocess.Popen[str]:
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.state.child", *args],
            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)


def wait_for_line(proc: subprocess.Popen[str], prefix: str, timeout_s: float = 60.0) -> str:
    """The child's first stdout line starting with `prefix` (the child prints and flushes it)."""
    import select
    import time

    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith(prefix):
                return line.strip()
    err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
    raise AssertionError(f"child never printed {prefix!r} (exit {proc.poll()}): {err[-2000:]}")


@pytest.fixture
def children() -> Iterator[Children]:
    kids = Children()
    yield kids
    kids.close()


@pytest.fixture
def make_config(tmp_path: Path, kafka_broker: BrokerInfo, app_id: str) -> Callable[..., StateConfig]:
    """Configs of one application on separate state dirs: one per simulated host."""

    def make(host: str = "a", **kwargs: Any) -> StateConfig:
        kwargs.setdefault("processing_guarantee", EXACTLY_ONCE_V2)
        return StateConfig(
            application_id=app_id,
            bootstrap_servers=kafka_broker.bootstrap_servers,
            state_dir=tmp_path / f"host-{host}",
            **kwargs,
        )

    return make


class RecordingListener:
    """A StateRestoreListener that keeps every call, to check what a restore read."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_restore_start(self, tp: TopicPartition, store: str, start_offset: int, end_offset: int) -> None:
        self.events.append(("start", store, tp, start_offset, end_offset))

    def on_batch_restored(self, tp: TopicPartition, store: str, batch_end_offset: int, num_restored: int) -> None:
        self.events.append(("batch", store, tp, batch_end_offset, num_restored))

    def on_restore_end(self, tp: TopicPartition, store: str, total_restored: int) -> None:
        self.events.append(("end", store, tp, total_restored))

    def starts(self, store: str) -> list[int]:
        return [e[3] for e in self.events if e[0] == "start" and e[1] == store]

    def restored(self, store: str) -> int:
        return sum(e[3] for e in self.events if e[0] == "end" and e[1] == store)


class StateHost:
    """One simulated host: its state directory and the changelog reader its tasks share."""

    def __init__(self, config: StateConfig, listener: RecordingListener | None = None) -> None:
        self.config = config
        self.listener = listener if listener is not None else RecordingListener()
        self.directory = config.open_state_directory()
        self.reader = config.changelog_reader(self.listener)

    def task(self, task: TaskId, specs: list[StoreSpec], writer_factory: WriterFactory | None = None) -> TaskState:
        return TaskState(self.config, self.directory, task, specs, self.reader, writer_factory=writer_factory)

    def active(self, task: TaskId, specs: list[StoreSpec], writer_factory: WriterFactory | None = None) -> TaskState:
        """Opened as active and restored (the reader polled until done)."""
        state = self.task(task, specs, writer_factory)
        state.open_active()
        self.reader.finish_restores()
        return state

    def standby(self, task: TaskId, specs: list[StoreSpec]) -> TaskState:
        state = self.task(task, specs)
        state.open_standby()
        return state

    def close(self) -> None:
        self.reader.close()
        self.directory.close()

    def __enter__(self) -> StateHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
