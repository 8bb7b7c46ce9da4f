"""The host's state thread: the only thread that touches the shared changelog reader, the state
updater and the tasks' state lifecycles (open, promote, close). Others hand it commands and wait for
them; between commands it applies changelog records (restores first, then standbys) and reports
which restores finished."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from streams_rt.state import ChangelogError, StateUpdater, StoreCorrupted

log = logging.getLogger(__name__)

T = TypeVar("T")
POLL_TIMEOUT_S = 0.05


class StateThreadStopped(RuntimeError):
    """The state thread is gone (stopped, or failed: `failure` says why); nothing can run on it."""


class OutageBackoff:
    """The state thread's waits while the broker cannot be reached: doubling from 0.5 s to 5 s,
    with one log line when the outage starts and one when it ends."""

    FIRST_S, MAX_S = 0.5, 5.0

    def __init__(self) -> None:
        self.began: float | None = None
        self.wait_s = self.FIRST_S

    def failed(self, error: Exception) -> float:
        """A call failed for want of the broker: how long to wait before the next."""
        if self.began is None:
            self.began = time.monotonic()
            log.warning("the broker cannot be reached (%s): restores and standbys wait for it, retrying "
                        "every %.1f-%.0f s", error, self.FIRST_S, self.MAX_S)
        else:
            self.wait_s = min(self.MAX_S, self.wait_s * 2)
        return self.wait_s

    def passed(self) -> None:
        """A poll went through: an outage, if there was one, is over."""
        if self.began is not None:
            log.warning("the broker answers again after %.1f s: restores and standbys go on",
                        time.monotonic() - self.began)
            self.began, self.wait_s = None, self.FIRST_S


class StateThread:
    def __init__(self, updater: StateUpdater, after_poll: Callable[[], None],
                 on_corruption: Callable[[StoreCorrupted], None], name: str = "state") -> None:
        """`after_poll` runs on this thread after every poll (the host moves restored tasks on);
        `on_corruption` when a poll met a damaged store (the host reopens that task)."""
        self._updater = updater
        self._after_poll = after_poll
        self._on_corruption = on_corruption
        # Each command with the future of its own result type: Any is the only type they share.
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"streams-rt-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def call(self, command: Callable[[], T], timeout_s: float | None = None) -> T:
        """Run `command` on the state thread and return its result (or raise its exception)."""
        if threading.current_thread() is self._thread:
            return command()
        if self._stopping.is_set():
            raise StateThreadStopped(f"the state thread has stopped ({self.failure or 'shut down'})")
        future: Future[T] = Future()
        self._commands.put((command, future))
        while True:
            try:
                return future.result(0.5 if timeout_s is None else timeout_s)
            except TimeoutError:
                if timeout_s is not None:
                    raise
                if not self._thread.is_alive():
                    raise StateThreadStopped(f"the state thread has stopped ({self.failure})") from None

    def _run(self) -> None:
        outage = OutageBackoff()
        while not self._stopping.is_set():
            try:
                self._drain()
                self._updater.poll(time.monotonic_ns() // 1_000_000, POLL_TIMEOUT_S)
                self._after_poll()
                outage.passed()
            except StoreCorrupted as e:  # one task's store: that task is reopened, the others go on
                self._on_corruption(e)
            except Exception as e:
                if isinstance(e, ChangelogError) and e.retriable:  # the broker is down: wait for it
                    self._stopping.wait(outage.failed(e))
                    continue
                log.exception("state thread failed")  # a restore that cannot go on: the host must stop
                self.failure = e
                self._stopping.set()
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                command, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(command())
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                future.set_exception(e)

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stopping.set()
        self._thread.join(timeout_s)
