"""Queries while the group changes, on real host processes and the real broker: tasks that do not move
stay queryable through a rebalance that adds a host, and `at_batch` answers from exactly one
committed batch (a consistent cut across tasks) or says why not."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.iq import Client, QueryError
from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.partitioner import partition_for
from streams_rt.protocol import TaskId
from streams_rt.rpc.http_auth import bearer_headers
from streams_rt.runtime.local import LocalApplication
from tests.iq.topologies import references
from tests.tasks.test_host import FAST, drain

pytestmark = pytest.mark.broker

PAGES = [f"/p{i}" for i in range(30)]
COUNTING_TASKS = {TaskId(0, p) for p in range(3)}  # page-counts' tasks: every batch here gives each records


class App:
    def __init__(self, broker: BrokerInfo, work: Path, hosts: int, **props: Any) -> None:
        self.bootstrap = broker.bootstrap_servers
        suffix = uuid.uuid4().hex[:8]
        self.topic = f"iq-views-{suffix}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(self.topic, 3, 1)]).values():
            future.result()
        self.views: list[tuple[str, int]] = []
        properties = {"application.id": f"iq-rb-{suffix}", "bootstrap.servers": self.bootstrap, **FAST, **props}
        self.app = LocalApplication("tests.iq.topologies:page_views", properties, work, hosts=hosts,
                                    topology_args={"suffix": f"-{suffix}"})
        self.loop = self.app.loop(max_records_per_task=100_000)
        self.app.wait_until_running(self.loop)

    def produce(self, rounds: int, start_ts: int) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "partitioner": "murmur2_random"})
        for i in range(rounds):
            for page in PAGES:  # every page, so every partition gets records
                ts = start_ts + i
                producer.produce(self.topic, b"user", page.encode(), timestamp=ts)
                self.views.append((page, ts))
        assert producer.flush(30) == 0

    def endpoint(self, name: str) -> str:
        found = self.app.hosts[name].query_endpoint
        assert found is not None
        return found

    def close(self) -> None:
        self.loop.close()
        self.app.close()


@pytest.fixture
def make_app(kafka_broker: BrokerInfo, tmp_path: Path) -> Iterator[Any]:
    made: list[App] = []

    def make(hosts: int, **props: Any) -> App:
        made.append(App(kafka_broker, tmp_path / f"app-{len(made)}", hosts, **props))
        return made[-1]

    yield make
    for app in made:
        app.close()


def active_hosts(endpoint: str, headers: dict[str, str]) -> dict[str, str]:
    """task -> the endpoint of its active host, from a host's metadata."""
    meta = httpx.get(f"http://{endpoint}/v1/metadata", headers=headers).json()
    return {task: host["endpoint"] for host in meta["hosts"] for task in host["active_tasks"]}


def test_tasks_that_do_not_move_stay_queryable_while_a_host_joins(make_app: Any) -> None:
    # A new host holds no state: it gets warm-ups first, and the active tasks move at the next probing
    # rebalance (KIP-441), the soonest Kafka's bounds allow.
    app = make_app(1, **{"probing.rebalance.interval.ms": 60_000})
    app.produce(20, 0)
    drain(app.loop)
    pages, _, _ = references(app.views)
    first = app.endpoint("host-0")
    headers = bearer_headers(app.app.coordinator.secret)
    answers: list[tuple[float, str, int, Any]] = []
    stop = threading.Event()

    def ask() -> None:
        with httpx.Client(timeout=10, headers=headers) as http:
            while not stop.is_set():
                for page in PAGES:
                    answer = http.get(f"http://{first}/v1/stores/page-counts/keys/{quote(page, safe='')}")
                    value = answer.json().get("value") if answer.status_code == 200 else answer.text
                    answers.append((time.monotonic(), page, answer.status_code, value))

    asking = threading.Thread(target=ask)
    asking.start()
    try:
        time.sleep(1)
        joined_at = time.monotonic()
        app.app.start_host("host-1")
        second = app.endpoint("host-1")
        deadline = time.monotonic() + 150
        while second not in active_hosts(first, headers).values():
            assert time.monotonic() < deadline, "the new host never got an active task"
            time.sleep(0.2)
        app.app.wait_until_running(app.loop)
        time.sleep(2)
    finally:
        stop.set()
        asking.join()
    owners = active_hosts(first, headers)
    stayed = {page for page in PAGES if owners[f"0_{partition_for(page.encode(), 3)}"] == first}
    moved = set(PAGES) - stayed
    assert stayed and moved, owners  # both kinds, or the test shows nothing
    during = [a for a in answers if a[0] >= joined_at]
    assert len({a[1] for a in during}) == len(PAGES) and len(during) > 3 * len(PAGES)
    for _, page, status, value in during:
        if page in stayed:
            assert (status, value) == (200, pages[page]), (page, status, value)
        else:  # a moving task: its old host answers, then sends callers on (307), or says to ask again
            assert status in (200, 307, 503), (page, status, value)
    assert {a[2] for a in during if a[1] in moved and a[0] > during[-1][0] - 1} == {307}


def test_at_batch_answers_from_exactly_that_committed_batch_across_tasks(make_app: Any) -> None:
    app = make_app(2)
    url = f"http://{app.endpoint('host-0')}"
    app.produce(3, 0)
    assert set(app.loop.run_once().records) >= COUNTING_TASKS
    first_batch = app.loop.batch_id
    first, _, _ = references(app.views)
    with Client(url, secret=app.app.coordinator.secret) as client:
        assert dict(client.all("page-counts", at_batch=first_batch)) == dict(first)
        app.produce(2, 100)
        assert set(app.loop.run_once().records) >= COUNTING_TASKS
        second_batch = app.loop.batch_id
        second, _, _ = references(app.views)
        assert dict(client.all("page-counts", at_batch=second_batch)) == dict(second)
        answer = client.get("page-counts", PAGES[0], at_batch=second_batch)
        assert answer.value == second[PAGES[0]] and answer.freshness["committed_batch"] == second_batch
        with pytest.raises(QueryError) as passed:
            client.get("page-counts", PAGES[0], at_batch=first_batch)
        assert passed.value.status == 409 and passed.value.code == "BATCH_PASSED"
        with pytest.raises(QueryError) as ahead:
            list(client.all("page-counts", at_batch=second_batch + 1))
        assert ahead.value.status == 503 and ahead.value.code == "BATCH_NOT_YET_COMMITTED"
        assert ahead.value.retry_after_s == 1.0
