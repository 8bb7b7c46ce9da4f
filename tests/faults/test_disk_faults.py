"""Damage to a host's state directory while the host is down, the way a failing disk, a crash or
an operator does it: a corrupted `.checkpoint`, a deleted task directory, a truncated RocksDB
file. The restarted host restores the task from its changelogs, says why in its log, and the
verifier finds nothing lost or counted twice."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from streams_rt.state.checkpoint import CHECKPOINT_FILE
from tests.faults.conftest import Runs
from tests.faults.harness import SummaryRow
from tests.state import disk_damage

pytestmark = pytest.mark.broker


def corrupt_checkpoint(task_dir: Path) -> None:
    (task_dir / CHECKPOINT_FILE).write_text("0\n2\nnot a checkpoint\n")


def delete_task_directory(task_dir: Path) -> None:
    disk_damage.empty_directory(task_dir)
    task_dir.rmdir()


def truncate_rocksdb_file(task_dir: Path) -> None:
    """The largest SST file of the task's stores, cut in half."""
    files = sorted(task_dir.rglob("*.sst"), key=lambda f: f.stat().st_size)
    assert files, f"no SST file under {task_dir}"
    disk_damage.truncate(files[-1])


# damage, and what the restarted host's log must say about the task
DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "corrupted .checkpoint": (corrupt_checkpoint, "task {task}: corrupt checkpoint {path} .*removing it"),
    "deleted task directory": (delete_task_directory, "task {task}: no state on disk"),
    # RocksDB's own message may span lines
    "truncated RocksDB file": (truncate_rocksdb_file, "task {task} store [^:]+: .{{0,3000}}?wiping it and restoring"),
}


@pytest.mark.faults
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_state_damaged_while_the_host_is_down_is_restored_from_the_changelog(
        runs: Runs, summary: list[SummaryRow], damage: str) -> None:
    run = runs.start("exactly_once_v2", duration_s=15.0)
    run.settle(hosts=3)
    run.run_for(3)
    victim = max(run.app.hosts, key=lambda name: len(run.tasks_of(name)))
    task = sorted(run.tasks_of(victim))[0]
    host = run.app.hosts[victim]
    run.fault([task])
    assert run.app.stop_host(victim) == 0
    task_dir = run.work_dir / victim / "state" / run.application_id / str(task)
    damage_it, says = DAMAGE[damage]
    damage_it(task_dir)
    run.checkpoints.excuse(victim)
    logged_before = len(host.log_tail(10**8))
    restarted = run.app.start_host(victim)
    run.settle(hosts=3)
    verdict = run.finish(f"{damage} while down", summary)
    assert verdict.passed, verdict.problems
    log = restarted.log_tail(10**8)[logged_before:]
    pattern = says.format(task=task, path=re.escape(str(task_dir / CHECKPOINT_FILE)))
    assert re.search(pattern, log, re.S), f"no line matching {pattern!r} in the restarted host's log:\n{log[-3000:]}"
