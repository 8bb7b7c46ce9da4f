"""KIP-429's rebalance metrics on the coordinator side, fed by the group state machine."""

from __future__ import annotations

import collections
import threading

from streams_rt.sensor import Sensor

HOUR_MS = 3_600_000


class HourlyRate:
    """Events in the trailing hour (Kafka reports this as `...-rate-per-hour`)."""

    def __init__(self) -> None:
        self._events: collections.deque[int] = collections.deque()
        self.total = 0

    def record(self, now_ms: int) -> None:
        self._events.append(now_ms)
        self.total += 1

    def per_hour(self, now_ms: int) -> int:
        while self._events and self._events[0] <= now_ms - HOUR_MS:
            self._events.popleft()
        return len(self._events)


class RebalanceMetrics:
    """The coordinator's GroupObserver: a round's latency runs from the first join that started it
    to the delivery of the last member's assignment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.latency = Sensor()
        self.rebalances = HourlyRate()
        self.failed = HourlyRate()
        self.last_rebalance_ms: int | None = None

    def rebalance_completed(self, generation: int, latency_ms: int, now_ms: int) -> None:
        with self._lock:
            self.latency.record(latency_ms)
            self.rebalances.record(now_ms)
            self.last_rebalance_ms = now_ms

    def rebalance_failed(self, generation: int, now_ms: int) -> None:
        with self._lock:
            self.failed.record(now_ms)

    def snapshot(self, now_ms: int) -> dict[str, float]:
        with self._lock:
            ago = -1.0 if self.last_rebalance_ms is None else (now_ms - self.last_rebalance_ms) / 1000
            return {
                "rebalance-latency-avg": self.latency.avg,
                "rebalance-latency-max": self.latency.max,
                "rebalance-latency-total": self.latency.total,
                "rebalance-total": self.rebalances.total,
                "rebalance-rate-per-hour": self.rebalances.per_hour(now_ms),
                "failed-rebalance-total": self.failed.total,
                "failed-rebalance-rate-per-hour": self.failed.per_hour(now_ms),
                "last-rebalance-seconds-ago": ago,
            }


class HostRestarts:
    """Task hosts the driver restarted after they died (beside the driver, or on their executor):
    counted here so the status page and /metrics show them with the rebalances they caused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._restarts = HourlyRate()

    def record(self, now_ms: int) -> None:
        with self._lock:
            self._restarts.record(now_ms)

    def snapshot(self, now_ms: int) -> dict[str, float]:
        with self._lock:
            return {"host-restart-total": self._restarts.total,
                    "host-restart-rate-per-hour": self._restarts.per_hour(now_ms)}
