"""A process is named by its pid and start time: a pid that outlived its process names no one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from streams_rt.processes import start_time, still_running


def test_a_running_process_is_found_and_an_exited_one_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = start_time(child.pid)
        assert started is not None and started.isdigit()
        assert still_running(child.pid, started)
    finally:
        child.kill()
        child.wait()
    assert start_time(child.pid) is None  # reaped: until the pid is reused, nothing has it
    assert not still_running(child.pid, started)


def test_the_same_pid_with_another_start_time_is_another_process() -> None:
    mine = start_time(os.getpid())
    assert mine is not None
    assert still_running(os.getpid(), mine)
    assert not still_running(os.getpid(), str(int(mine) + 1))
    assert not still_running(os.getpid(), None)  # a record without a start time proves nothing


def test_an_exited_process_not_yet_reaped_is_gone() -> None:
    """A zombie keeps its pid and start time in /proc until its parent waits for it (a task host's
    parent, a Spark Python worker, never does): it must not count as running."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    started = start_time(child.pid)
    assert started is not None
    child.kill()
    deadline = time.monotonic() + 10
    while " Z " not in Path(f"/proc/{child.pid}/stat").read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert " Z " in Path(f"/proc/{child.pid}/stat").read_text()  # exited, not reaped: still in /proc
    assert start_time(child.pid) is None and not still_running(child.pid, started)
    child.wait()
