"""The ownership audit's writer and checker, without services: each way a log can show two owners
is found, and a clean hand-over is not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.tasks import ownership_log
from streams_rt.tasks.ownership_log import OwnershipLog

T0, T1 = TaskId(0, 0), TaskId(0, 1)
RANGES = {TopicPartition("in", 0): (0, 10)}


def written(tmp_path: Path, *steps: tuple[str, str, int, object]) -> list[dict[str, object]]:
    """Write (host, event, generation, tasks-or-task) steps through real writers, read them back."""
    path = tmp_path / "audit" / "ownership.log"
    logs: dict[str, OwnershipLog] = {}
    for host, event, generation, what in steps:
        log = logs.setdefault(host, OwnershipLog(path, host))
        if event == "assigned":
            assert isinstance(what, list)
            log.assigned(generation, what)
        elif event == "revoked":
            assert isinstance(what, list)
            log.released(generation, what, clean=True)
        else:
            assert isinstance(what, TaskId)
            log.batch(generation, what, RANGES, replay=False)
    for log in logs.values():
        log.close()
    return ownership_log.read(path)


def test_a_cooperative_hand_over_is_clean(tmp_path: Path) -> None:
    events = written(tmp_path,
                     ("a", "assigned", 1, [T0, T1]), ("a", "batch", 1, T0), ("a", "batch", 1, T1),
                     ("a", "revoked", 2, [T1]), ("a", "assigned", 2, [T0]), ("b", "assigned", 2, []),
                     ("b", "assigned", 3, [T1]), ("a", "assigned", 3, [T0]), ("b", "batch", 3, T1),
                     ("a", "batch", 3, T0))
    assert [e["event"] for e in events][:3] == ["assigned", "batch", "batch"]
    assert events[1]["ranges"] == [["in", 0, 0, 10]] and events[1]["pid"] == os.getpid()
    assert ownership_log.check(events) == []


def test_two_hosts_given_one_task_at_one_generation_are_found(tmp_path: Path) -> None:
    events = written(tmp_path, ("a", "assigned", 4, [T0]), ("b", "assigned", 4, [T0, T1]))
    violations = ownership_log.check(events)
    assert [(v.line, v.reason) for v in violations] == [(2, "task 0_0 is active on a and b at generation 4")]


def test_batches_of_one_task_from_two_hosts_at_one_generation_are_found(tmp_path: Path) -> None:
    events = written(tmp_path, ("a", "batch", 4, T0), ("b", "batch", 4, T0))
    assert [v.reason for v in ownership_log.check(events)] == ["task 0_0: batches from a and b at generation 4"]


def test_a_zombie_batch_at_an_older_generation_is_found(tmp_path: Path) -> None:
    events = written(tmp_path, ("a", "batch", 4, T0), ("b", "batch", 5, T0), ("a", "batch", 4, T0))
    assert [v.reason for v in ownership_log.check(events)] == [
        "task 0_0: a committed a batch at generation 4 after one at generation 5"]


def test_a_torn_last_line_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "ownership.log"
    log = OwnershipLog(path, "a")
    log.assigned(1, [T0])
    log.close()
    with path.open("a") as f:
        f.write('{"host":"a","ev')
    assert [e["event"] for e in ownership_log.read(path)] == ["assigned"]


def test_a_full_disk_warns_once_and_processing_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    log = OwnershipLog(Path("/dev/full"), "a")  # every write fails with ENOSPC
    log.assigned(1, [T0])
    log.batch(1, T0, RANGES, replay=False)
    log.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "cannot append to the task ownership log /dev/full" in warnings[0]
