"""Member-side rebalance metrics (KIP-429): how long the listener's callbacks take."""

from __future__ import annotations

from streams_rt.sensor import Sensor


class ListenerMetrics:
    """Member side: latency of the revoked / assigned / lost callbacks (ms)."""

    NAMES = ("revoked", "assigned", "lost")

    def __init__(self) -> None:
        self.sensors = {name: Sensor() for name in self.NAMES}

    def snapshot(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, s in self.sensors.items():
            out[f"partitions-{name}-latency-avg"] = s.avg
            out[f"partitions-{name}-latency-max"] = s.max
        return out
