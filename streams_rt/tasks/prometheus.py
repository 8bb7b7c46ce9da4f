"""A task host's metrics in Prometheus' text format, read from the host at each scrape. Names are
Kafka Streams' where Kafka has the figure, prefixed `streams_rt_` with `-` as `_` (as Prometheus'
JMX exporter writes Kafka's); docs/operations.md lists them. The host's HTTP server (the
interactive-query endpoint) serves the registry at `/metrics` and adds its own request latency."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from streams_rt.protocol import TaskId, TopicPartition

PREFIX = "streams_rt_"

# Task level (Kafka's stream-task-metrics), from TaskMetrics.snapshot(): counters end in -total.
_TASK_GAUGES = {
    "process-rate": "records processed per second over the last minute",
    "process-latency-avg": "average time to process a record, in ms (a batch's processing and cache flush over "
                           "its records)",
    "process-latency-max": "the largest per-record processing time of a batch, in ms",
    "commit-latency-avg": "average time a batch's commit took, in ms",
    "commit-latency-max": "longest time a batch's commit took, in ms",
}
_TASK_COUNTERS = {
    "process-total": "records processed",
    "commit-total": "batches committed",
    "dropped-records-total": "records the deserialization exception handler skipped (log_and_continue)",
}
_LISTENER = {
    f"partitions-{kind}-latency-{stat}": f"{'average' if stat == 'avg' else 'longest'} time the rebalance "
    f"listener's tasks-{kind} callback took, in ms"
    for kind in ("revoked", "assigned", "lost") for stat in ("avg", "max")
}
_ROCKSDB = {
    "estimate-num-keys": "RocksDB's estimate of the keys in the store",
    "cur-size-all-mem-tables": "bytes in the store's active and unflushed memtables",
    "block-cache-usage": "bytes in the block cache (shared by every store of the host)",
    "block-cache-capacity": "capacity of the block cache, in bytes (shared by every store of the host)",
}


def metric_name(kafka_name: str) -> str:
    """`process-latency-avg` -> `streams_rt_process_latency_avg`."""
    return PREFIX + kafka_name.replace("-", "_")


@dataclass(frozen=True)
class HostFigures:
    """What a scrape reads from the host, in one consistent copy."""

    tasks: Mapping[TaskId, Mapping[str, float]]  # active tasks: TaskMetrics.snapshot()
    restores: Mapping[TaskId, tuple[int, float]]  # (restore-total, restore-rate)
    restore_remaining: Mapping[TaskId, int]  # tasks restoring now: offsets still to read
    standby_lags: Mapping[TaskId, Mapping[TopicPartition, int]]  # records-lag per changelog partition
    listener: Mapping[str, float]  # KIP-429's member-side figures
    stores: Mapping[tuple[TaskId, str], Mapping[str, int]] = field(default_factory=dict)  # RocksDB figures


class HostFiguresSource(Protocol):
    """What the collector reads (the task host)."""

    def metric_figures(self) -> HostFigures: ...


class HostCollector(Collector):
    def __init__(self, figures: HostFiguresSource) -> None:
        self._figures = figures

    def collect(self) -> Iterator[Metric]:
        f = self._figures.metric_figures()
        for name, doc in _TASK_GAUGES.items():
            gauge = GaugeMetricFamily(metric_name(name), doc, labels=["task"])
            for task, figures in sorted(f.tasks.items()):
                gauge.add_metric([str(task)], figures[name])
            yield gauge
        for name, doc in _TASK_COUNTERS.items():
            # prometheus_client appends `_total` to a counter's name.
            counter = CounterMetricFamily(metric_name(name.removesuffix("-total")), doc, labels=["task"])
            for task, figures in sorted(f.tasks.items()):
                counter.add_metric([str(task)], figures[name])
            yield counter
        restored = CounterMetricFamily(metric_name("restore"), "records restored from the changelogs since the "
                                       "host started (standbys' updates not included)", labels=["task"])
        rate = GaugeMetricFamily(metric_name("restore-rate"), "records restored per second over the last minute",
                                 labels=["task"])
        for task, (total, per_second) in sorted(f.restores.items()):
            restored.add_metric([str(task)], total)
            rate.add_metric([str(task)], per_second)
        yield restored
        yield rate
        remaining = GaugeMetricFamily(metric_name("restore-remaining-records-total"), "changelog offsets a "
                                      "restoring active task still has to read", labels=["task"])
        for task, left in sorted(f.restore_remaining.items()):
            remaining.add_metric([str(task)], left)
        yield remaining
        lag = GaugeMetricFamily(metric_name("records-lag"), "offsets a standby is behind its changelog "
                                "partition's end (read at most a second ago)", labels=["task", "topic", "partition"])
        for task, lags in sorted(f.standby_lags.items()):
            for tp, records in sorted(lags.items()):
                lag.add_metric([str(task), tp.topic, str(tp.partition)], records)
        yield lag
        for name, doc in _LISTENER.items():
            yield GaugeMetricFamily(metric_name(name), doc, value=f.listener[name])
        for name, doc in _ROCKSDB.items():
            gauge = GaugeMetricFamily(metric_name(name), doc, labels=["task", "store"])
            for (task, store), figures in sorted(f.stores.items()):
                gauge.add_metric([str(task), store], figures[name])
            yield gauge


def host_registry(figures: HostFiguresSource) -> CollectorRegistry:
    """A registry of its own per host (tests run several in one process); the HTTP server adds
    its request latency to it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HostCollector(figures))
    return registry
