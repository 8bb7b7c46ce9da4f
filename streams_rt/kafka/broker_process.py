"""Finding, tying and ending broker JVMs by their process: a broker is recognised by its command line
(`kafka.Kafka` and its directory's absolute `server.properties`), so one of a directory is found even
when `broker.json` does not name it."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
# Resolved once here: dlopen/dlsym in the forked child of a multi-threaded process can deadlock on
# the loader lock, so the preexec hook only calls the already-resolved function.
_prctl = ctypes.CDLL(None, use_errno=True).prctl


def is_broker_of(pid: int, properties_file: Path) -> bool:
    """The pid is alive and is a Kafka broker started with `properties_file`."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"kafka.Kafka" in cmdline and os.fsencode(properties_file) in cmdline


def brokers_of(properties_file: Path) -> list[int]:
    """The pids of every live broker started with `properties_file`."""
    return sorted(int(entry.name) for entry in os.scandir("/proc")
                  if entry.name.isdigit() and is_broker_of(int(entry.name), properties_file))


def die_with_parent(parent_pid: int) -> Callable[[], None]:
    """A preexec hook: ask Linux to SIGTERM the broker when its parent dies (PR_SET_PDEATHSIG). Linux
    sends it when the parent *thread* that forked exits, even if the rest of the process lives on."""

    def hook() -> None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return hook


def terminate(pid: int, grace_s: float) -> bool:
    """SIGTERM `pid`, SIGKILL it if it still runs after `grace_s`; True once it has ended. A process
    that is already gone counts as ended; one we may not signal raises PermissionError."""
    try:
        os.kill(pid, signal.SIGTERM)
        if wait_for_exit(pid, grace_s):
            return True
        log.warning("broker pid %d did not stop within %.0f s of SIGTERM; sending SIGKILL", pid, grace_s)
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # it exited between the check and the signal: ended all the same
        return True
    return wait_for_exit(pid, 10.0)


def wait_for_exit(pid: int, timeout_s: float) -> bool:
    """Wait for `pid` to end: reap it if it is our child, else watch /proc (a zombie counts as ended)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            try:
                if ") Z " in Path(f"/proc/{pid}/stat").read_text(errors="replace"):
                    return True
            except OSError:  # gone
                return True
        time.sleep(0.1)
    return False
