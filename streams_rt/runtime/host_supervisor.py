"""The driver's host supervisor: a thread that watches the task hosts beside the driver and restarts
one that died, where it ran and with its state directory, as the pure core (supervision.py) says.
Each death and restart is logged once, and each restart counted (`host-restart-total` on the
status page and /metrics)."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping

from streams_rt.runtime.supervision import Phase, Supervision

log = logging.getLogger(__name__)

POLL_S = 0.2


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def describe_exit(code: int) -> str:
    """`-9` -> "killed by SIGKILL"; `1` -> "exited with 1"."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with {code}"


class HostSupervisor:
    def __init__(
        self,
        exit_codes: Callable[[], Mapping[str, int | None]],
        restart: Callable[[str], int],
        restarted: Callable[[], None],
        core: Supervision | None = None,
        clock: Callable[[], int] = monotonic_ms,
        poll_s: float = POLL_S,
    ) -> None:
        """`exit_codes()`: each host the driver runs, with its exit code (None: alive).
        `restart(name)` starts a dead host again and returns its pid (raises when it does not come
        up). `restarted()` counts a restart."""
        self._exit_codes, self._restart, self._restarted = exit_codes, restart, restarted
        self._core = core or Supervision()
        self._clock, self._poll_s = clock, poll_s
        self._lock = threading.Lock()  # guards the core: the application reports starts and stops
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="streams-rt-host-supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stopping.set()
        self._thread.join(30)

    def started(self, name: str) -> None:
        """A host was started (by the application, or by this supervisor)."""
        with self._lock:
            self._core.started(name, self._clock())

    def stopped(self, name: str) -> None:
        """A host is being stopped on purpose: not restarted."""
        with self._lock:
            self._core.stopped(name)

    def _run(self) -> None:
        while not self._stopping.wait(self._poll_s):
            try:
                self._pass()
            except Exception:  # a bug here must not end supervision silently
                log.exception("host supervisor: a pass failed; trying again")

    def _pass(self) -> None:
        codes = self._exit_codes()
        with self._lock:
            now = self._clock()
            for name, code in sorted(codes.items()):
                if code is not None and self._core.phase(name) is Phase.RUNNING:
                    death = self._core.exited(name, now)
                    log.warning("task host %s %s; restarting it in its state directory in %.1f s (restart %d in a "
                                "row)", name, describe_exit(code), death.restart_in_ms / 1000, death.attempt)
            due = self._core.due(now)
        for name in due:
            if self._stopping.is_set():
                return
            try:
                pid = self._restart(name)
            except Exception as e:  # noqa: BLE001 - the host did not come up: logged, tried again later
                with self._lock:
                    delay = self._core.start_failed(name, self._clock())
                log.warning("task host %s did not come back (%s); trying again in %.1f s", name,
                            str(e).splitlines()[0][:300] if str(e) else type(e).__name__, delay / 1000)
                continue
            with self._lock:
                self._core.started(name, self._clock())
            self._restarted()
            log.warning("task host %s restarted (pid %d)", name, pid)
