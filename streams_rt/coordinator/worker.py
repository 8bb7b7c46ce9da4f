"""A daemon thread that does one piece of the coordinator's work off the group lock each time it is
notified (notifications coalesce), until it is closed: the record saver and the round runner."""

from __future__ import annotations

import threading


class Worker:
    def __init__(self, name: str) -> None:
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def notify(self) -> None:
        """There may be work (cheap: called after group changes)."""
        self._wake.set()

    def close(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout_s)

    @property
    def closing(self) -> bool:
        """close() was called: a long piece of work may stop early."""
        return self._stopping.is_set()

    def work(self) -> None:
        """One pass; overridden. Call `notify()` to be run again at once."""

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()
            if not self._stopping.is_set():
                self.work()
