"""Naming one process across pid reuse. Once a process exits, its pid soon names another process or
a thread (pid_max is often 32,768, and JVM threads draw from the same numbers); the pid together with
its start time names exactly one. A process that has exited but is not reaped yet (a zombie: a task
host's parent is a Spark Python worker that never waits for it) keeps its pid and start time, and
counts as gone."""

from __future__ import annotations

from pathlib import Path


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or None
    when no such process is running (none has the pid, or it has exited and awaits its reaping)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # from field 3, the state, on
    return None if fields[0] in ("Z", "X") else fields[19]


def still_running(pid: int, started: str | None) -> bool:
    """Whether the process that had `pid` and started at `started` (start_time's answer then) runs."""
    return started is not None and start_time(pid) == started
