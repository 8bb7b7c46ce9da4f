"""A system under test as process trees: started, sampled for the RSS of every process it spawned
(JVMs, Python workers, task hosts), and stopped, all of it, afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def parents() -> dict[int, int]:
    """pid -> parent pid of every process now."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            found[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def descendants(roots: list[int]) -> set[int]:
    """The roots and every process below them."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents().items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found


def kind(pid: int) -> str:
    """What a process of a system is, for the RSS breakdown: a streams_rt task host, a Spark Python
    worker, a JVM (Spark's, Kafka Streams'), or another process (the application's Python driver)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    text = b" ".join(argv)
    if b"host_main" in text:
        return "task hosts"
    if b"pyspark.daemon" in text or b"pyspark.worker" in text:
        return "Python workers"
    if argv and argv[0].endswith(b"java"):
        return "JVM"
    return "driver (Python)"


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


class SystemProcesses:
    """The processes of one system: `commands` started now, their trees' summed RSS sampled every
    `interval_s` until stop()."""

    def __init__(self, commands: list[list[str]], env: dict[str, str], log: Path, interval_s: float = 0.5) -> None:
        self.log = log.open("ab")
        self.procs = [subprocess.Popen(c, env=env, stdout=self.log, stderr=subprocess.STDOUT) for c in commands]
        self.peak_rss = 0
        self.peak_parts: dict[str, int] = {}  # by kind of process, at the moment of the peak
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, args=(interval_s,), daemon=True)
        self._sampler.start()

    def _sample(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            parts: dict[str, int] = {}
            for pid in descendants([p.pid for p in self.procs]):
                name = kind(pid)
                parts[name] = parts.get(name, 0) + rss_bytes(pid)
            total = sum(parts.values())
            if total > self.peak_rss:
                self.peak_rss, self.peak_parts = total, parts

    def running(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM every process of the trees, SIGKILL what is left after `grace_s`."""
        self._stop.set()
        self._sampler.join()
        pids = descendants([p.pid for p in self.procs])
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            for p in self.procs:
                p.poll()
            time.sleep(0.2)
        for pid in pids:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for p in self.procs:
            p.wait()
        self.log.close()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
