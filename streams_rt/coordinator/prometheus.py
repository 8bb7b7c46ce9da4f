"""The coordinator's metrics in Prometheus' text format, read from the operator's status object at
each scrape (so they never disagree with the status page). Names are Kafka's where Kafka has the
figure, prefixed `streams_rt_coordinator_` with `-` as `_` (as Prometheus' JMX exporter writes
Kafka's): KIP-429's rebalance metrics, and Kafka's `assigned-partitions` and `records-lag`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

PREFIX = "streams_rt_coordinator_"
GROUP_STATES = ("EMPTY", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE")
TASK_KINDS = ("active", "standby", "warmup")

# KIP-429's names (consumer-coordinator-metrics) as gauges; its three totals, and the driver's host restarts,
# are counters below.
_KIP_429_GAUGES = {
    "rebalance-latency-avg": "average time a rebalance took, in ms, from its first join to the last assignment fetched",
    "rebalance-latency-max": "longest time a rebalance took, in ms",
    "rebalance-rate-per-hour": "rebalances completed in the last hour",
    "failed-rebalance-rate-per-hour": "rebalances that failed in the last hour",
    "last-rebalance-seconds-ago": "seconds since the last rebalance completed (-1: none yet)",
}
_COUNTERS = {
    "rebalance-latency-total": "time spent in rebalances, in ms",
    "rebalance-total": "rebalances completed",
    "failed-rebalance-total": "rebalances that failed (the assignor failed, or members missed the rebalance timeout)",
    "host-restart-total": "task hosts the driver restarted after they died (beside it, or on their executor)",
}


def metric_name(kafka_name: str) -> str:
    """`rebalance-latency-avg` -> `streams_rt_coordinator_rebalance_latency_avg`."""
    return PREFIX + kafka_name.replace("-", "_")


class StatusCollector(Collector):
    """Reads `status()` (streams_rt.coordinator.status.build_status) at every scrape."""

    def __init__(self, status: Callable[[], Mapping[str, Any]]) -> None:
        self._status = status

    def collect(self) -> Iterator[Metric]:
        status = self._status()
        metrics: Mapping[str, float] = status["metrics"]
        for name, doc in _KIP_429_GAUGES.items():
            yield GaugeMetricFamily(metric_name(name), doc, value=metrics[name])
        for name, doc in _COUNTERS.items():
            # prometheus_client appends `_total` to a counter's name.
            yield CounterMetricFamily(metric_name(name.removesuffix("-total")), doc, value=metrics[name])
        yield GaugeMetricFamily(metric_name("generation"), "the group's generation (Kafka's generation id)",
                                value=status["generation"])
        state = GaugeMetricFamily(metric_name("group-state"), "1 for the group's current state", labels=["state"])
        for name in GROUP_STATES:
            state.add_metric([name], 1.0 if status["state"] == name else 0.0)
        yield state
        yield GaugeMetricFamily(metric_name("members"), "members of the group (task hosts)", value=len(status["hosts"]))
        assigned = GaugeMetricFamily(
            metric_name("assigned-tasks"), "tasks assigned to each member in the current generation, by type "
            "(Kafka's assigned-partitions)", labels=["member", "type"])
        for host in status["hosts"]:
            for kind in TASK_KINDS:
                assigned.add_metric([host["name"], kind], len(host[kind]))
        yield assigned
        phases: dict[str, int] = {}
        for task in status["tasks"]:
            phases[task["state"]] = phases.get(task["state"], 0) + 1
        tasks = GaugeMetricFamily(metric_name("tasks"), "tasks by the state their active owner reported",
                                  labels=["state"])
        for phase, count in sorted(phases.items()):
            tasks.add_metric([phase], count)
        yield tasks
        names = {host["member"]: host["name"] for host in status["hosts"]}
        lag = GaugeMetricFamily(
            metric_name("records-lag"), "records a replica's state is behind its changelogs' end, as its host "
            "reported it when the current generation formed (-1: unknown)", labels=["task", "member", "type"])
        for task in status["tasks"]:
            for member, records in sorted(task["lags"].items()):
                kind = ("active" if member == task["active"] else "warmup" if member in task["warmup"] else "standby")
                lag.add_metric([task["task"], names.get(member, member), kind], records)
        yield lag


def status_registry(status: Callable[[], Mapping[str, Any]]) -> CollectorRegistry:
    """A registry of its own per coordinator (tests run several in one process)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatusCollector(status))
    return registry
