"""A task host's `/metrics` (real host processes, real RocksDB, the real broker), parsed with
prometheus_client's own text parser: the figures equal what the test fed (records processed per
task, records dropped by the deserialization handler, records restored per task against the
changelogs' ends), and the others are there and move (commits, RocksDB keys, standby lag, the
rebalance listener, the query endpoint's own latency)."""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable

import httpx
import pytest
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from streams_rt.kafka.offsets import end_offsets
from streams_rt.kafka.partitioner import partition_for
from streams_rt.rpc.http_auth import bearer_headers
from streams_rt.runtime.local import LocalApplication
from streams_rt.runtime.topics import sum_by_task, task_changelogs
from tests.coordinator.settle import wait_until_settled
from tests.tasks.test_host import Apps, drain

pytestmark = pytest.mark.broker

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(app: LocalApplication, host: str) -> Samples:
    endpoint = app.hosts[host].query_endpoint
    answer = httpx.get(f"http://{endpoint}/metrics", timeout=10, headers=bearer_headers(app.coordinator.secret))
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(answer.text) for s in family.samples}


def by(samples: Samples, name: str, label: str) -> dict[str, float]:
    """`name`'s samples keyed by one label's value."""
    return {dict(labels)[label]: value for (n, labels), value in samples.items() if n == name}


def eventually(check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.2)


def test_processing_standby_rocksdb_listener_and_query_figures(apps: Apps) -> None:
    apps.create_topics({"dd-events": 2, "dd-firsts": 2})
    app, loop = apps.start("deduplicate", hosts=2, **{"num.standby.replicas": 1})
    wait_until_settled(app, 2)  # no task moves (and so no counter starts over) after this
    keys = [f"user-{i % 70}" for i in range(400)]
    apps.produce("dd-events", [(key, b"v", 1_000 + i) for i, key in enumerate(keys)])
    drain(loop)
    per_partition = Counter(partition_for(k.encode(), 2) for k in keys)
    distinct = Counter(partition_for(k.encode(), 2) for k in set(keys))
    scraped = {name: scrape(app, name) for name in app.hosts}
    processed: dict[str, float] = {}
    for samples in scraped.values():
        processed.update(by(samples, "streams_rt_process_total", "task"))
    assert processed == {f"0_{p}": count for p, count in per_partition.items()}
    for samples in scraped.values():
        actives = by(samples, "streams_rt_process_total", "task")
        assert set(by(samples, "streams_rt_commit_total", "task")) == set(actives)
        assert all(v >= 1 for v in by(samples, "streams_rt_commit_total", "task").values())
        assert all(v > 0 for v in by(samples, "streams_rt_process_rate", "task").values())
        assert all(v > 0 for v in by(samples, "streams_rt_commit_latency_max", "task").values())
        assert all(v == 0 for v in by(samples, "streams_rt_dropped_records_total", "task").values())
        keys_in = {(dict(labels)["task"], dict(labels)["store"]): value for (n, labels), value in samples.items()
                   if n == "streams_rt_estimate_num_keys"}
        for task in actives:
            assert keys_in[(task, "seen")] == distinct[int(task.split("_")[1])]
        assert samples[("streams_rt_block_cache_capacity", frozenset({("task", task), ("store", "seen")}))] > 0
        assert samples[("streams_rt_partitions_assigned_latency_max", frozenset())] > 0
    # Every task has one standby, on the host without its active; each reports its changelog lag.
    for name in app.hosts:
        def caught_up(name: str = name) -> bool:
            samples = scrape(app, name)
            lags = {(dict(lb)["task"], dict(lb)["topic"]): v for (n, lb), v in samples.items()
                    if n == "streams_rt_records_lag"}
            standbys = {f"0_{p}" for p in range(2)} - set(by(samples, "streams_rt_process_total", "task"))
            return {t for t, _ in lags} == standbys and all(v == 0 for v in lags.values())
        eventually(caught_up)
    # The query endpoint times itself: one more request of a kind, one more observation.
    name = next(iter(app.hosts))

    def stores_count() -> float:
        return scrape(app, name).get(("streams_rt_iq_request_latency_seconds_count",
                                      frozenset({("kind", "stores"), ("status", "200")})), 0.0)

    before = stores_count()
    assert httpx.get(f"http://{app.hosts[name].query_endpoint}/v1/stores", timeout=10,
                     headers=bearer_headers(app.coordinator.secret)).status_code == 200
    assert stores_count() == before + 1


def test_dropped_records_and_restore_figures(apps: Apps) -> None:
    apps.create_topics({"dd-events": 2, "dd-firsts": 2})
    records: list[tuple[str | None, bytes | None, int]] = [(f"k{i % 30}", b"v", 1_000 + i) for i in range(200)]
    records[50] = ("k-bad", b"\xff\xfe not UTF-8", 1_050)  # the string serde cannot read it
    apps.produce("dd-events", records)
    app, loop = apps.start("deduplicate", hosts=1, **{"deserialization.exception.handler": "log_and_continue"})
    drain(loop)
    samples = scrape(app, "host-0")
    assert sum(by(samples, "streams_rt_process_total", "task").values()) == 199
    dropped = by(samples, "streams_rt_dropped_records_total", "task")
    assert dropped == {f"0_{p}": float(p == partition_for(b"k-bad", 2)) for p in range(2)}
    # Without its state the host restores every changelog record of its tasks, and counts them.
    app.stop_host("host-0")
    shutil.rmtree(app.work_dir / "host-0" / "state")
    app.start_host("host-0")
    app.wait_until_running(loop)
    admin = AdminClient({"bootstrap.servers": apps.bootstrap})
    changelogs = task_changelogs(app.topology, app.layout)
    ends = sum_by_task(end_offsets(admin, [tp for tps in changelogs.values() for tp in tps]), changelogs)
    samples = scrape(app, "host-0")
    assert by(samples, "streams_rt_restore_total", "task") == {str(t): float(n) for t, n in ends.items()}
    assert all(n > 0 for n in ends.values())
    assert by(samples, "streams_rt_restore_remaining_records_total", "task") == {}
    assert by(samples, "streams_rt_process_total", "task") == {"0_0": 0.0, "0_1": 0.0}
