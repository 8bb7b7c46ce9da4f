"""The invariants every fault test checks, whatever the fault:

1. never two active owners of a task in one generation (the hosts' `task.ownership.log`);
2. checkpoint offsets never go backwards per changelog partition, except after an unclean
   exactly-once shutdown or deliberate damage to the state directory (KAFKA-9169's check);
3. standbys caught up within `acceptable.recovery.lag` once the fault has settled;
4. no task directory left locked by a process that is not a live host.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streams_rt.protocol import TopicPartition
from streams_rt.state.checkpoint import CHECKPOINT_FILE, parse_checkpoint
from streams_rt.state.errors import CorruptCheckpoint
from streams_rt.state.state_directory import LOCK_FILE
from streams_rt.tasks import ownership_log


def ownership_violations(log_path: Path) -> list[str]:
    return [f"ownership log line {v.line}: {v.reason}" for v in ownership_log.check(ownership_log.read(log_path))]


@dataclass
class CheckpointWatch:
    """Samples every host's `.checkpoint` files and remembers each (host, task, changelog partition)'s
    highest offset; an offset below it is a violation, unless the host was `excused` since (its
    state was lost on purpose: a kill under exactly-once, or damage done by the test)."""

    work_dir: Path
    application_id: str
    hosts_glob: str = "*"  # each host's directory under work_dir, holding its state/
    highest: dict[tuple[str, str, TopicPartition], int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    samples: int = 0

    def sample(self) -> None:
        self.samples += 1
        for path in self.work_dir.glob(f"{self.hosts_glob}/state/{self.application_id}/*/{CHECKPOINT_FILE}"):
            host, task = path.relative_to(self.work_dir).parts[0], path.parts[-2]
            try:
                offsets = parse_checkpoint(path.read_text())
            except (OSError, CorruptCheckpoint, UnicodeDecodeError):
                continue  # gone or being damaged by the test; the next sample sees what replaces it
            for tp, offset in offsets.items():
                seen = self.highest.get((host, task, tp))
                if seen is not None and offset < seen:
                    self.violations.append(f"{host} task {task}: checkpoint of {tp} went back from {seen} to {offset}")
                self.highest[(host, task, tp)] = max(offset, seen if seen is not None else offset)

    def excuse(self, host: str) -> None:
        self.highest = {k: v for k, v in self.highest.items() if k[0] != host}


def flock_holders() -> dict[int, int]:
    """Inode -> pid of every flock on this machine (/proc/locks), without taking any lock."""
    holders = {}
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        holders[int(fields[5].split(":")[2])] = int(fields[4])
    return holders


def stale_task_locks(work_dir: Path, application_id: str, live_pids: Collection[int],
                     hosts_glob: str = "*") -> list[str]:
    """Task directories whose `.lock` is held by a process that is not one of `live_pids`."""
    holders = flock_holders()
    stale = []
    for lock in work_dir.glob(f"{hosts_glob}/state/{application_id}/*/{LOCK_FILE}"):
        try:
            pid = holders.get(os.stat(lock).st_ino)
        except OSError:
            continue
        if pid is not None and pid not in live_pids:
            stale.append(f"{lock.parent} is locked by pid {pid}, not a live host")
    return stale


def standby_lags(statuses: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Every standby's lag, by 'host/task'."""
    return {f"{host}/{task}": int(lag) for host, status in statuses.items()
            for task, lag in status["standby_lag"].items()}


def wait_for_standbys(read_statuses: Any, expected_standbys: int, acceptable_lag: int,
                      timeout_s: float = 90.0) -> dict[str, int]:
    """Until `expected_standbys` standbys exist and each is within `acceptable_lag` of its
    changelogs' ends; returns their lags, or raises with the last ones seen."""
    deadline = time.monotonic() + timeout_s
    lags: dict[str, int] = {}
    while True:
        lags = standby_lags(read_statuses())
        if len(lags) == expected_standbys and all(lag <= acceptable_lag for lag in lags.values()):
            return lags
        if time.monotonic() > deadline:
            raise AssertionError(f"standbys not caught up within {timeout_s} s: want {expected_standbys} within "
                                 f"{acceptable_lag}, have {lags}")
        time.sleep(0.2)
