"""The disk-fault matrix, on real RocksDB files, the real broker and real processes: every kind of
RocksDB file flipped, cut short, emptied or deleted, the store directory emptied, special files and
directories where files must be (and the reverse), no permission. Every case ends with every
committed key readable after the reopen, or with a typed error naming the path: never fewer keys
without an error, never a hang.

A task commits through a child process that is then killed with -9 ("killed": the last commits live
in RocksDB's write-ahead log), and the same state reopened and closed cleanly ("closed": the data in
SST files). Each case damages a copy of one of them and reopens it in a child process that acts as a
host: a StoreCorrupted closes the task dirty and opens it again."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.protocol import TaskId
from streams_rt.state import EXACTLY_ONCE_V2, StateConfig, StoreCorrupted, ensure_changelog_topics
from tests.state.child import NOBODY, SPECS, expected_kv
from tests.state.conftest import Children, StateHost, wait_for_line
from tests.state.disk_damage import (
    DAMAGES,
    empty_directory,
    flip_byte,
    replace_with_directory,
    replace_with_fifo,
    rocksdb_file,
)

pytestmark = pytest.mark.broker

TASK = TaskId(0, 2)
COMMITS, PER_COMMIT = 4, 300


@dataclass(frozen=True)
class Committed:
    """A task's state on disk after COMMITS commits, in both shapes."""

    app_id: str
    bootstrap: str
    killed: Path  # a state.dir left by kill -9 of the writer (commits in the WAL)
    closed: Path  # the same state reopened and closed cleanly (commits in SST files)

    def config(self, state_dir: Path) -> StateConfig:
        return StateConfig(self.app_id, self.bootstrap, state_dir, processing_guarantee=EXACTLY_ONCE_V2)


@pytest.fixture(scope="module")
def committed(kafka_broker: BrokerInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Committed]:
    base = tmp_path_factory.mktemp("disk-faults")
    done = Committed(f"disk-faults-{os.getpid()}", kafka_broker.bootstrap_servers, base / "killed", base / "closed")
    config = done.config(done.killed)
    ensure_changelog_topics(config.bootstrap_servers, [s.changelog(done.app_id) for s in SPECS], TASK.partition + 1)
    children = Children()
    try:
        child = children.start("writer", json.dumps({
            "app_id": done.app_id, "bootstrap": done.bootstrap, "state_dir": str(done.killed),
            "task": str(TASK), "commits": COMMITS, "per_commit": PER_COMMIT,
        }))
        wait_for_line(child, f"COMMITTED {COMMITS}")
        wait_for_line(child, "MIDWRITE")
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        children.close()
    shutil.copytree(done.killed, done.closed)
    with StateHost(done.config(done.closed)) as host:
        state = host.active(TASK, SPECS)
        assert dict(state.kv_store("kv").all()) == expected_kv(COMMITS, PER_COMMIT)
        state.close()
    yield done


@dataclass(frozen=True)
class Case:
    """Damage to one copy of the state: `target` finds the path (from the task directory),
    `damage` damages it, `outcome` is what the reopen must do about it:
      wiped         the open finds the damage: one warning names the file, the store is wiped and
                    restored from its changelog;
      found in use  the open does not look there, a read does: StoreCorrupted names the file, the
                    host closes and reopens, which wipes and restores (one warning);
      gone          the store lost the data and the offset together (one warning: the checkpoint
                    named data the store no longer holds), it is restored from the beginning;
      untouched     nothing the store needs: no warning, nothing restored;
      checkpoint    the checkpoint is removed (one warning), the stores' own offsets decide."""

    shape: str  # "killed" or "closed"
    target: Callable[[Path], Path]
    damage: Callable[[Path], None]
    outcome: str


def _store(task_dir: Path) -> Path:
    return task_dir / "rocksdb" / "kv"


def _file(kind: str) -> Callable[[Path], Path]:
    return lambda task_dir: rocksdb_file(_store(task_dir), kind)


def _checkpoint(task_dir: Path) -> Path:
    return task_dir / ".checkpoint"


def _store_path_is_a_file(path: Path) -> None:
    shutil.rmtree(path)
    path.write_text("not a store")


# A flipped byte inside an SST data block is found by the read that needs the block; a WAL that
# is emptied or deleted took the data and the offset describing it (they are one WriteBatch);
# RocksDB never reads OPTIONS files here (every open passes its options).
ROCKSDB_OUTCOMES = {"SST flip": "found in use", "WAL empty": "gone", "WAL delete": "gone"}
ROCKSDB_CASES = {
    f"{kind} {how}": Case("killed" if kind == "WAL" else "closed", _file(kind), DAMAGES[how],
                          "untouched" if kind == "OPTIONS" else ROCKSDB_OUTCOMES.get(f"{kind} {how}", "wiped"))
    for kind in ("SST", "MANIFEST", "CURRENT", "WAL", "OPTIONS")
    for how in ("flip", "truncate", "empty", "delete")
}
OTHER_CASES = {
    "store directory emptied": Case("closed", _store, empty_directory, "gone"),
    "store directory emptied, killed": Case("killed", _store, empty_directory, "gone"),
    "CURRENT a FIFO": Case("closed", _file("CURRENT"), replace_with_fifo, "wiped"),
    "CURRENT a directory": Case("closed", _file("CURRENT"), replace_with_directory, "wiped"),
    "window segment SST flip": Case("closed", lambda task_dir: rocksdb_file(task_dir / "rocksdb" / "win", "SST"),
                                    flip_byte, "wiped"),
    ".checkpoint a FIFO": Case("closed", _checkpoint, replace_with_fifo, "checkpoint"),
}
PATH_CASES = {
    ".checkpoint a directory": Case("closed", _checkpoint, replace_with_directory, "error"),
    "store directory a file": Case("closed", _store, _store_path_is_a_file, "error"),
}


def _reopen(committed: Committed, children: Children, state_dir: Path, as_nobody: bool = False) -> dict[str, Any]:
    child = children.start("reopen", json.dumps({
        "app_id": committed.app_id, "bootstrap": committed.bootstrap, "state_dir": str(state_dir),
        "task": str(TASK), "commits": COMMITS, "per_commit": PER_COMMIT, "as_nobody": as_nobody,
        "guarantee": "at_least_once",  # no transactional producer to fence: faster, and beside the point here
    }))
    result: dict[str, Any] = json.loads(wait_for_line(child, "RESULT", timeout_s=120).split(" ", 1)[1])
    assert child.wait(timeout=30) == 0
    return result


def _damaged_copy(committed: Committed, case: Case, into: Path) -> Path:
    shutil.copytree(committed.killed if case.shape == "killed" else committed.closed, into)
    target = case.target(into / committed.app_id / str(TASK))
    case.damage(target)
    return target


@pytest.mark.parametrize("name", [*ROCKSDB_CASES, *OTHER_CASES])
def test_damage_ends_with_every_committed_key(committed: Committed, children: Children, tmp_path: Path,
                                              name: str) -> None:
    case = {**ROCKSDB_CASES, **OTHER_CASES}[name]
    target = _damaged_copy(committed, case, tmp_path / "state")
    result = _reopen(committed, children, tmp_path / "state")
    assert "error" not in result, result
    assert result["kv_equal"] and result["windows_equal"], result  # every committed key, nothing else
    warnings, restored = result["warnings"], sum(result["restored"].values())
    assert result["corrupted"] == ([str(target)] if case.outcome == "found in use" else []), result
    if case.outcome in ("wiped", "found in use"):
        assert len(warnings) == 1 and str(target) in warnings[0] and "wiping it" in warnings[0], result
        assert restored > 0
    elif case.outcome == "gone":
        assert len(warnings) == 1 and "holds nothing (its files are gone)" in warnings[0], result
        assert restored > 0
    elif case.outcome == "checkpoint":
        assert len(warnings) == 1 and f"{target} line 0: is a FIFO" in warnings[0], result
        assert restored == 0
    else:
        assert (warnings, restored) == ([], 0), result


@pytest.mark.parametrize("name", PATH_CASES)
def test_damage_no_wipe_repairs_is_a_typed_error_naming_the_path(committed: Committed, children: Children,
                                                                  tmp_path: Path, name: str) -> None:
    target = _damaged_copy(committed, PATH_CASES[name], tmp_path / "state")
    result = _reopen(committed, children, tmp_path / "state")
    assert (result.get("error"), result.get("path")) == ("StatePathError", str(target)), result


def test_no_permission_is_a_typed_error_naming_the_path(committed: Committed, children: Children) -> None:
    """As root, the child drops to nobody (root ignores permissions); the state is copied where
    nobody can reach it, except the store's directory."""
    shared = Path(tempfile.mkdtemp(prefix="disk-faults-"))
    try:
        shared.chmod(0o755)
        state_dir = shared / "state"
        shutil.copytree(committed.closed, state_dir)
        store = _store(state_dir / committed.app_id / str(TASK))
        as_nobody = os.getuid() == 0
        if as_nobody:
            for path in (state_dir, *state_dir.rglob("*")):
                os.chown(path, NOBODY, NOBODY)
            os.chown(store, 0, 0)
        store.chmod(0o700 if as_nobody else 0)
        result = _reopen(committed, children, state_dir, as_nobody=as_nobody)
        assert (result.get("error"), result.get("path")) == ("StatePathError", str(store)), result
        assert "Permission denied" in result["message"]
    finally:
        for path in (shared, *shared.rglob("*")):
            if path.is_dir() and not path.is_symlink():
                path.chmod(stat.S_IRWXU)
        shutil.rmtree(shared)


def test_a_store_damaged_while_running_is_reopened_and_restored(
    make_config: Callable[..., StateConfig], caplog: pytest.LogCaptureFixture
) -> None:
    """The host's part: a read raises StoreCorrupted naming the store, the task and the file; the
    host closes the task dirty and opens it again (still holding the error), which wipes the store
    and restores it from the changelog."""
    config = make_config("a")
    config.ensure_changelog_topics([s.changelog(config.application_id) for s in SPECS], TASK.partition + 1)
    rng = random.Random(5)
    expected = {b"key-%05d" % i: rng.randbytes(60) for i in range(2000)}  # incompressible: many blocks
    with StateHost(config) as host:
        state = host.active(TASK, SPECS)
        for key, value in expected.items():
            state.kv_store("kv").put(key, value)
        state.commit()
        state.close()
        state = host.active(TASK, SPECS)
        sst = rocksdb_file(_store(host.directory.task_dir(TASK)), "SST")
        flip_byte(sst, 1 / 3)
        try:
            dict(state.kv_store("kv").all())
            raise AssertionError("a damaged block was read without an error")
        except StoreCorrupted as exc:
            assert (exc.store, exc.task, exc.path) == ("kv", str(TASK), sst)
            state.close(clean=False)
            with caplog.at_level("WARNING", logger="streams_rt.state"):
                state = host.active(TASK, SPECS)
        assert dict(state.kv_store("kv").all()) == expected
        assert host.listener.restored("kv") > 0
        wiped = [r.getMessage() for r in caplog.records if "wiping it" in r.getMessage()]
        assert len(wiped) == 1 and str(sst) in wiped[0] and "found damaged in use" in wiped[0]
        state.close()


def test_damage_found_while_restoring_fails_only_its_task(make_config: Callable[..., StateConfig]) -> None:
    """Two tasks restore on one reader; one store is damaged (a FIFO appears in its directory before
    its restore opens it). The reader's poll raises StoreCorrupted for that task; the host closes
    it and keeps polling: the other task's restore completes with nothing lost; the damaged task,
    opened again, is wiped and restored."""
    spec = SPECS[0]
    tasks = [TaskId(0, 0), TaskId(0, 1)]
    config = make_config("a")
    config.ensure_changelog_topics([spec.changelog(config.application_id)], 2)
    expected = {task: {b"%s-%d" % (str(task).encode(), i): b"v%d" % i for i in range(5000)} for task in tasks}
    with StateHost(config) as host:
        for task in tasks:
            state = host.active(task, [spec])
            for key, value in expected[task].items():
                state.kv_store("kv").put(key, value)
            state.commit()
            state.close()
    with StateHost(make_config("b")) as host:
        damaged, healthy = (host.task(task, [spec]) for task in tasks)
        damaged.open_active()
        healthy.open_active()
        fifo = _store(host.directory.task_dir(tasks[0])) / "CURRENT"
        fifo.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(fifo)
        with pytest.raises(StoreCorrupted) as caught:
            host.reader.finish_restores()
        assert (caught.value.task, caught.value.path) == (str(tasks[0]), fifo)
        damaged.close(clean=False)
        host.reader.finish_restores()
        assert dict(healthy.kv_store("kv").all()) == expected[tasks[1]]
        healthy.close()
        again = host.active(tasks[0], [spec])
        assert dict(again.kv_store("kv").all()) == expected[tasks[0]]
        again.close()
