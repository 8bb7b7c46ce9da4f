"""A count / total / max / avg accumulator and a trailing rate, shared by the coordinator's and the member's metrics."""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass


@dataclass
class Sensor:
    """count / total / max / avg of one measured quantity."""

    count: int = 0
    total: float = 0.0
    max: float = 0.0

    def record(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.max = max(self.max, value)

    @property
    def avg(self) -> float:
        return self.total / self.count if self.count else 0.0


class TrailingRate:
    """Amount per second over the trailing window (Kafka's `-rate` metrics average over two 30 s
    samples); recorded and read from different threads."""

    def __init__(self, window_s: float = 60.0) -> None:
        self.window_s = window_s
        self._samples: collections.deque[tuple[float, float]] = collections.deque()  # (time, amount)
        self._lock = threading.Lock()

    def record(self, amount: float, now_s: float) -> None:
        with self._lock:
            self._samples.append((now_s, amount))
            self._forget(now_s)

    def per_second(self, now_s: float) -> float:
        with self._lock:
            self._forget(now_s)
            return sum(amount for _, amount in self._samples) / self.window_s

    def _forget(self, now_s: float) -> None:
        while self._samples and self._samples[0][0] <= now_s - self.window_s:
            self._samples.popleft()
