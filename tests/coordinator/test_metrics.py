"""KIP-429's rebalance metrics as the coordinator reports them."""

from __future__ import annotations

from streams_rt.coordinator.metrics import HOUR_MS, RebalanceMetrics

NAMES = {
    "rebalance-latency-avg", "rebalance-latency-max", "rebalance-latency-total", "rebalance-total",
    "rebalance-rate-per-hour", "failed-rebalance-total", "failed-rebalance-rate-per-hour",
    "last-rebalance-seconds-ago",
}


def test_names_and_values() -> None:
    m = RebalanceMetrics()
    assert set(m.snapshot(0)) == NAMES and m.snapshot(0)["last-rebalance-seconds-ago"] == -1
    m.rebalance_completed(1, 100, now_ms=1_000)
    m.rebalance_completed(2, 300, now_ms=2_000)
    m.rebalance_failed(3, now_ms=2_500)
    s = m.snapshot(now_ms=5_000)
    assert s["rebalance-latency-avg"] == 200 and s["rebalance-latency-max"] == 300
    assert s["rebalance-latency-total"] == 400 and s["rebalance-total"] == 2
    assert s["failed-rebalance-total"] == 1 and s["failed-rebalance-rate-per-hour"] == 1
    assert s["last-rebalance-seconds-ago"] == 3.0


def test_rate_per_hour_forgets_old_rounds() -> None:
    m = RebalanceMetrics()
    m.rebalance_completed(1, 10, now_ms=0)
    m.rebalance_completed(2, 10, now_ms=HOUR_MS // 2)
    assert m.snapshot(HOUR_MS // 2)["rebalance-rate-per-hour"] == 2
    assert m.snapshot(HOUR_MS + 1)["rebalance-rate-per-hour"] == 1
    assert m.snapshot(HOUR_MS + 1)["rebalance-total"] == 2
