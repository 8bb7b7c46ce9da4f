"""What a task host measures, under Kafka Streams' metric names: each active task's processing and
commits (task-level `process-*`, `commit-latency-*`, `dropped-records-total`) and each task's
restores (KIP-869's `restore-total`, `restore-rate`, `restore-remaining-records-total`). The
Prometheus exposition is `prometheus.py`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.sensor import Sensor, TrailingRate
from streams_rt.state import StateRestoreListener


class TaskMetrics:
    """One active task's batches: records processed, per-record processing latency (a batch's
    processing and cache-flush time over its records, in ms), commit latency (ms), and records the
    deserialization handler dropped. Recorded on the batch's thread, read by scrapes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.process = Sensor()  # one sample per batch: its per-record latency
        self.process_rate = TrailingRate()
        self.records = 0
        self.commit = Sensor()
        self.dropped_records = 0

    def batch_committed(self, read: int, process_s: float, commit_s: float, dropped: int) -> None:
        """A committed batch: records read, of which `dropped` could not be deserialized."""
        records = read - dropped
        if records:
            self.process.record(process_s * 1000 / records)
        self.records += records
        self.process_rate.record(records, self._clock())
        self.commit.record(commit_s * 1000)
        self.dropped_records += dropped

    def snapshot(self) -> dict[str, float]:
        avg = self.process.total / self.process.count if self.process.count else 0.0
        return {
            "process-total": self.records,
            "process-rate": self.process_rate.per_second(self._clock()),
            "process-latency-avg": avg,
            "process-latency-max": self.process.max,
            "commit-total": self.commit.count,
            "commit-latency-avg": self.commit.avg,
            "commit-latency-max": self.commit.max,
            "dropped-records-total": self.dropped_records,
        }


class RestoreMetrics:
    """A StateRestoreListener that counts restored records per task (store and changelog partition
    name the task) and hands every event on to `then` (the console's progress and log line)."""

    def __init__(self, store_subtopologies: Mapping[str, int], then: StateRestoreListener,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._subtopology = dict(store_subtopologies)
        self._then = then
        self._clock = clock
        self._lock = threading.Lock()
        self.total: dict[TaskId, int] = {}
        self.rates: dict[TaskId, TrailingRate] = {}

    def task_of(self, tp: TopicPartition, store: str) -> TaskId:
        return TaskId(self._subtopology[store], tp.partition)

    def on_restore_start(self, tp: TopicPartition, store: str, start_offset: int, end_offset: int) -> None:
        with self._lock:
            task = self.task_of(tp, store)
            self.total.setdefault(task, 0)
            self.rates.setdefault(task, TrailingRate())
        self._then.on_restore_start(tp, store, start_offset, end_offset)

    def on_batch_restored(self, tp: TopicPartition, store: str, batch_end_offset: int, num_restored: int) -> None:
        with self._lock:
            task = self.task_of(tp, store)
            self.total[task] = self.total.get(task, 0) + num_restored
            self.rates.setdefault(task, TrailingRate()).record(num_restored, self._clock())
        self._then.on_batch_restored(tp, store, batch_end_offset, num_restored)

    def on_restore_end(self, tp: TopicPartition, store: str, total_restored: int) -> None:
        self._then.on_restore_end(tp, store, total_restored)

    def snapshot(self) -> dict[TaskId, tuple[int, float]]:
        """Every task restored here since the host started: (records restored, records/s lately)."""
        now = self._clock()
        with self._lock:
            return {task: (total, self.rates[task].per_second(now)) for task, total in self.total.items()}
