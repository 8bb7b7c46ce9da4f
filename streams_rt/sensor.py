"""A count / total / max / avg accumulator, shared by the coordinator's and the member's metrics."""

from __future__ import annotations

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
