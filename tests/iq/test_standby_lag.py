"""A standby too far behind, forced without a race: two real host processes where task 0_0's standby
reads nothing from its changelogs (the `hold_standby:0_0` fault point pauses its partitions in the
host's changelog consumer), while its active task counts 900 page views. The standby's lag is then
exactly its changelogs' ends, and stays so: with `max_lag` under it the answer is 503
STANDBY_TOO_FAR_BEHIND saying why and carrying that lag; with `max_lag` at it the standby answers,
marked as a standby with its lag; a standby that is not held answers at `max_lag=0`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.offsets import end_offsets
from streams_rt.kafka.partitioner import partition_for
from streams_rt.protocol import TaskId
from streams_rt.rpc.http_auth import bearer_headers
from streams_rt.runtime.local import LocalApplication
from streams_rt.runtime.topics import task_changelogs
from tests.tasks.test_host import FAST, drain

pytestmark = pytest.mark.broker

PAGES = [f"/p{i}" for i in range(30)]
HELD, FREE = TaskId(0, 0), TaskId(0, 1)


def page_of(task: TaskId) -> str:
    return next(p for p in PAGES if partition_for(p.encode(), 3) == task.partition)


def ask(endpoint: str, task: TaskId, max_lag: int, headers: dict[str, str]) -> httpx.Response:
    return httpx.get(f"http://{endpoint}/v1/stores/page-counts/keys/{quote(page_of(task), safe='')}",
                     params={"max_lag": max_lag}, headers=headers)


def standby_host(endpoint: str, task: TaskId, headers: dict[str, str]) -> str:
    meta = httpx.get(f"http://{endpoint}/v1/metadata", headers=headers).json()
    return next(str(h["endpoint"]) for h in meta["hosts"] if str(task) in h["standby_tasks"])


def answer_when(what: str, request: Callable[[], httpx.Response], done: Callable[[httpx.Response], bool],
                timeout_s: float = 60) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while not done(answer := request()):
        assert time.monotonic() < deadline, f"{what}: last answer {answer.status_code} {answer.text}"
        time.sleep(0.2)
    return answer


def test_a_standby_held_behind_answers_503_with_its_lag_over_max_lag(kafka_broker: BrokerInfo, tmp_path: Path) -> None:
    bootstrap, suffix = kafka_broker.bootstrap_servers, uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(f"iq-views-{suffix}", 3, 1)]).values():
        future.result()
    properties = {"application.id": f"iq-lag-{suffix}", "bootstrap.servers": bootstrap,
                  "num.standby.replicas": 1, **FAST}
    app = LocalApplication("tests.iq.topologies:page_views", properties, tmp_path, hosts=0,
                           topology_args={"suffix": f"-{suffix}"})
    loop = None
    try:
        for name in ("host-0", "host-1"):  # whichever gets 0_0's standby holds it
            app.start_host(name, env={"STREAMS_RT_FAULTS": f"hold_standby:{HELD}"})
        loop = app.loop()
        app.wait_until_running(loop)
        producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
        for i in range(30):
            for page in PAGES:
                producer.produce(f"iq-views-{suffix}", b"user", page.encode(), timestamp=i)
        assert producer.flush(30) == 0
        drain(loop)
        any_host = next(h.query_endpoint for h in app.hosts.values() if h.query_endpoint)
        assert any_host is not None
        headers = bearer_headers(app.coordinator.secret)
        held_at, free_at = standby_host(any_host, HELD, headers), standby_host(any_host, FREE, headers)
        changelogs = task_changelogs(app.topology, app.layout)[HELD]
        behind = sum(end_offsets(admin, changelogs).values())  # the held standby has read none of it
        assert behind > 0

        # Its lag is read once a second: until the first read after the drain, the standby goes by an
        # older one (null: 503 saying so; one read mid-drain: 503 with it; 0, from before the drain's
        # writes: it answers, from nothing).
        seen: list[tuple[int, str, Any]] = []

        def lag_read(answer: httpx.Response) -> bool:
            body = answer.json()
            lag = body["lag"] if answer.status_code == 503 else body.get("freshness", {}).get("lag")
            seen.append((answer.status_code, body.get("error"), lag))
            return bool(lag == behind)

        refused = answer_when(f"task {HELD}'s standby lag read", lambda: ask(held_at, HELD, 0, headers), lag_read)
        assert all(s == (404, "KEY_NOT_FOUND", 0) or (s[:2] == (503, "STANDBY_TOO_FAR_BEHIND")
                                                     and (s[2] is None or 0 < s[2] < behind)) for s in seen[:-1]), seen
        body = refused.json()
        print(f"held standby of {HELD} at {held_at}, max_lag=0: {refused.status_code} {body}")
        assert (refused.status_code, body["error"]) == (503, "STANDBY_TOO_FAR_BEHIND")
        assert (body["task"], body["lag"], body["max_lag"]) == (str(HELD), behind, 0)
        assert body["message"] == (f"task {HELD}'s standby here is {behind} offsets behind, over max_lag=0")
        assert refused.headers["retry-after"] == "1"
        assert ask(held_at, HELD, behind - 1, headers).json()["lag"] == behind  # still behind, by as much

        stale = ask(held_at, HELD, behind, headers)  # within max_lag: it answers from what it has (nothing)
        assert (stale.status_code, stale.json()["error"]) == (404, "KEY_NOT_FOUND")
        assert stale.json()["freshness"] == {"task": str(HELD), "standby": True, "committed_batch": None,
                                             "lag": behind}

        fresh = answer_when(f"task {FREE}'s standby caught up", lambda: ask(free_at, FREE, 0, headers),
                            lambda a: a.status_code == 200 and a.json()["value"] == 30)
        assert fresh.json()["freshness"]["standby"] is True
        assert fresh.json()["freshness"]["lag"] == 0
    finally:
        if loop is not None:
            loop.close()
        app.close()
