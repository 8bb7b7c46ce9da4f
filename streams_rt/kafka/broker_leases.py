"""Who is using a shared dev broker: one lease file per process, `leases/<pid>-<start time>` in the
broker directory. A lease names its process across pid reuse (streams_rt.processes), so the lease of
a process that exited, however it exited, is recognised as stale and no longer keeps the broker.
The callers serialise changes with the directory's start lock."""

from __future__ import annotations

import os
from pathlib import Path

from streams_rt.processes import start_time, still_running


def take(directory: Path, pid: int | None = None) -> None:
    """Record that `pid` (default: this process) uses the broker."""
    pid = os.getpid() if pid is None else pid
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{pid}-{start_time(pid)}").touch()


def drop(directory: Path, pid: int | None = None) -> None:
    """`pid` (default: this process) no longer uses the broker."""
    pid = os.getpid() if pid is None else pid
    for lease in _leases(directory):
        if lease.name.split("-", 1)[0] == str(pid):
            lease.unlink(missing_ok=True)


def holders(directory: Path) -> list[int]:
    """The pids that hold a lease and still run; stale leases are deleted on the way."""
    live = []
    for lease in _leases(directory):
        pid, _, started = lease.name.partition("-")
        if pid.isdigit() and still_running(int(pid), started):
            live.append(int(pid))
        else:
            lease.unlink(missing_ok=True)
    return sorted(live)


def _leases(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except FileNotFoundError:
        return []
