"""The query endpoint of real task hosts (OS processes, real RocksDB, the real broker): point, range,
all and window reads against a reference computed in plain Python, metadata, routing across two
hosts (307 and proxy), standby reads with max_lag, the Python client and the CLI, and a JSON 4xx for
every bad request."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams_rt.iq import Client, QueryError
from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.partitioner import partition_for
from streams_rt.protocol.wire import INT64_MAX
from streams_rt.rpc.auth import SECRET_ENV, SharedSecret
from streams_rt.rpc.http_auth import bearer_headers
from streams_rt.runtime.batch_loop import BatchLoop
from streams_rt.runtime.local import LocalApplication
from tests.iq.topologies import references, session_references
from tests.tasks.test_host import FAST, drain

pytestmark = pytest.mark.broker

PAGES = [f"/page/{i}" for i in range(40)] + ["/", "/a b", "/ü", "/100%"]


@dataclass
class Running:
    app: LocalApplication
    loop: BatchLoop
    views: list[tuple[str, int]]
    endpoints: list[str]

    def url(self, index: int = 0) -> str:
        return f"http://{self.endpoints[index]}"

    @property
    def headers(self) -> dict[str, str]:
        """What every client of the endpoint sends: the run's secret."""
        return bearer_headers(self.app.coordinator.secret)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(url, headers=self.headers, **kwargs)


@pytest.fixture(scope="module")
def running(kafka_broker: BrokerInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    suffix = uuid.uuid4().hex[:8]
    topic = f"iq-views-{suffix}"
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, 3, 1)]).values():
        future.result()
    rng = random.Random(16)
    views = [(rng.choice(PAGES), rng.randrange(0, 600_000)) for _ in range(3_000)]
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "partitioner": "murmur2_random"})
    for page, ts in views:
        producer.produce(topic, f"user-{ts % 7}".encode(), page.encode(), timestamp=ts)
    assert producer.flush(30) == 0
    properties = {"application.id": f"iq-{suffix}", "bootstrap.servers": kafka_broker.bootstrap_servers,
                  "num.standby.replicas": 1, **FAST}
    app = LocalApplication("tests.iq.topologies:page_views", properties,
                           tmp_path_factory.mktemp("iq") / str(properties["application.id"]), hosts=2,
                           topology_args={"suffix": f"-{suffix}"})
    loop = app.loop(max_records_per_task=1_000)
    try:
        app.wait_until_running(loop)
        drain(loop)
        endpoints = [h.query_endpoint for h in app.hosts.values()]
        assert all(endpoints)
        yield Running(app, loop, views, [e for e in endpoints if e])
    finally:
        loop.close()
        app.close()


def metadata(running: Running) -> dict[str, Any]:
    return dict(running.get(f"{running.url()}/v1/metadata").json())


def owner_of(running: Running, store_subtopology: int, partitions: int, key: bytes) -> str:
    task = f"{store_subtopology}_{partition_for(key, partitions)}"
    hosts = [h["endpoint"] for h in metadata(running)["hosts"] if task in h["active_tasks"]]
    assert len(hosts) == 1, (task, hosts)
    return str(hosts[0])


def test_point_lookups_answer_every_key_from_its_owner_with_its_freshness(running: Running) -> None:
    pages, _, lengths = references(running.views)
    with Client(running.url(), secret=running.app.coordinator.secret) as client:
        for page, count in pages.items():
            answer = client.get("page-counts", page)
            assert answer.value == count, page
            assert answer.served_by == owner_of(running, 0, 3, page.encode())
            fresh = answer.freshness
            assert fresh["standby"] is False and fresh["lag"] == 0
            assert isinstance(fresh["committed_batch"], int) and fresh["committed_batch"] >= 0
            assert fresh["task"] == f"0_{partition_for(page.encode(), 3)}"
        for length, count in lengths.items():  # int64 keys, behind a repartition topic
            assert client.get("by-length", length).value == count
        with pytest.raises(QueryError) as missing:
            client.get("page-counts", "/never-viewed")
        assert missing.value.status == 404 and missing.value.code == "KEY_NOT_FOUND"


def test_a_key_held_elsewhere_is_redirected_to_its_owner_or_proxied(running: Running) -> None:
    page = "/100%"
    owner = owner_of(running, 0, 3, page.encode())
    other = next(e for e in running.endpoints if e != owner)
    quoted = f"/v1/stores/page-counts/keys/{quote(page, safe='')}"
    moved = running.get(f"http://{other}{quoted}")
    assert moved.status_code == 307, moved.text
    assert moved.headers["location"] == f"http://{owner}{quoted}"
    assert moved.json()["moved_to"] == owner
    proxied = running.get(f"http://{other}{quoted}", params={"route": "proxy"})
    assert proxied.status_code == 200, proxied.text
    assert proxied.json()["served_by"] == owner
    assert proxied.json()["value"] == references(running.views)[0][page]


def test_all_and_range_are_paged_with_a_cursor_under_the_cap(running: Running) -> None:
    pages, _, _ = references(running.views)
    seen: dict[str, int] = {}
    for endpoint in running.endpoints:
        cursor: str | None = None
        previous: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 7, **({"cursor": cursor} if cursor else {})}
            body = running.get(f"http://{endpoint}/v1/stores/page-counts/all", params=params).json()
            assert len(body["entries"]) <= 7
            for entry in body["entries"]:
                assert previous is None or entry["key"].encode() > previous.encode()  # key order, no repeats
                previous = entry["key"]
                assert entry["key"] not in seen
                seen[entry["key"]] = entry["value"]
            assert all(not f["standby"] for f in body["freshness"])
            cursor = body["next_cursor"]
            if cursor is None:
                break
    assert seen == dict(pages)
    with Client(running.url(1), secret=running.app.coordinator.secret) as client:
        everything = list(client.all("page-counts", page_size=5))
        assert everything == sorted(pages.items(), key=lambda kv: kv[0].encode())
        lower, upper = "/page/1", "/page/3"
        expected = sorted(((p, c) for p, c in pages.items() if lower.encode() <= p.encode() <= upper.encode()),
                          key=lambda kv: kv[0].encode())
        assert list(client.range("page-counts", lower, upper, page_size=3)) == expected


def test_all_of_one_task_reads_its_entries_from_its_active_host(running: Running) -> None:
    """`/all?task=`: the task's entries only; a host without it sends the caller to its owner (307),
    or asks it with `route=proxy`."""
    pages, _, _ = references(running.views)
    for partition in range(3):
        task = f"0_{partition}"
        mine = {p: c for p, c in pages.items() if partition_for(p.encode(), 3) == partition}
        owner = owner_of(running, 0, 3, next(iter(mine)).encode())
        other = next(e for e in running.endpoints if e != owner)
        body = running.get(f"http://{owner}/v1/stores/page-counts/all", params={"task": task, "limit": 1000}).json()
        assert {e["key"]: e["value"] for e in body["entries"]} == mine and body["next_cursor"] is None
        assert [f["task"] for f in body["freshness"]] == [task]
        moved = running.get(f"http://{other}/v1/stores/page-counts/all", params={"task": task})
        assert moved.status_code == 307 and moved.json()["moved_to"] == owner
        proxied = running.get(f"http://{other}/v1/stores/page-counts/all", params={"task": task, "route": "proxy"})
        assert proxied.json()["served_by"] == owner


def test_window_fetches_match_the_reference(running: Running) -> None:
    _, windows, _ = references(running.views)
    with Client(running.url(), secret=running.app.coordinator.secret) as client:
        for page in PAGES[:10] + PAGES[-4:]:
            mine = sorted((start, count) for (p, start), count in windows.items() if p == page)
            answer = client.windows("page-windows", page)
            assert [(w["start"], w["value"]) for w in answer.value] == mine
            assert all(w["end"] == w["start"] + 60_000 for w in answer.value)
            narrow = client.windows("page-windows", page, 120_000, 299_999)
            assert [(w["start"], w["value"]) for w in narrow.value] == [m for m in mine if 120_000 <= m[0] < 300_000]


def test_session_fetches_match_the_reference(running: Running) -> None:
    """A session store's /windows: the key's sessions (start, end, count) overlapping [from, to]."""
    sessions = session_references(running.views)
    with Client(running.url(), secret=running.app.coordinator.secret) as client:
        for page in PAGES[:6] + PAGES[-2:]:
            answer = client.windows("page-sessions", page)
            assert [(w["start"], w["end"], w["value"]) for w in answer.value] == sessions[page]
            narrow = client.windows("page-sessions", page, 120_000, 299_999)
            assert [(w["start"], w["end"], w["value"]) for w in narrow.value] == [
                s for s in sessions[page] if s[1] >= 120_000 and s[0] <= 299_999]


def test_metadata_names_every_host_its_tasks_and_the_generation(running: Running) -> None:
    meta = metadata(running)
    assert meta["generation"] >= 1 and len(meta["hosts"]) == 2
    assert {h["endpoint"] for h in meta["hosts"]} == set(running.endpoints)
    actives = [t for h in meta["hosts"] for t in h["active_tasks"]]
    assert sorted(actives) == sorted(f"{s}_{p}" for s in (0, 1) for p in range(3))  # each task once
    for host in meta["hosts"]:  # num.standby.replicas=1 on two hosts: each host is the other's standby
        assert set(host["standby_tasks"]).isdisjoint(host["active_tasks"])
        assert all(p["partition"] in range(3) for p in host["active_partitions"] + host["standby_partitions"])
    assert sorted(t for h in meta["hosts"] for t in h["standby_tasks"]) == sorted(actives)
    assert {s["name"] for s in meta["stores"]} == {"page-counts", "page-windows", "page-sessions", "by-length"}
    for page in PAGES[:5]:
        body = running.get(f"{running.url(1)}/v1/metadata/page-counts/keys/{page.lstrip('/')}").json()
        partition = partition_for(page.lstrip("/").encode(), 3)
        assert body["task"] == f"0_{partition}" and body["partition"] == partition
        assert body["active"] == owner_of(running, 0, 3, page.lstrip("/").encode())
        assert len(body["standbys"]) == 1 and body["standbys"][0] != body["active"]
    stores = running.get(f"{running.url()}/v1/stores").json()["stores"]
    by_name = {s["name"]: s for s in stores}
    assert by_name["page-windows"]["kind"] == "window" and by_name["by-length"]["key_serde"] == "int64"
    assert by_name["page-sessions"]["kind"] == "session"


def test_a_standby_answers_within_max_lag_and_is_marked_so(running: Running) -> None:
    pages, _, _ = references(running.views)
    page = PAGES[0]
    standby = next(e for e in running.endpoints if e != owner_of(running, 0, 3, page.encode()))
    url = f"http://{standby}/v1/stores/page-counts/keys/{quote(page, safe='')}"
    deadline = time.monotonic() + 30
    while True:  # the standby's lag is read once a second: until then it is not known
        answer = running.get(url, params={"max_lag": 10_000})
        if answer.status_code == 200 or time.monotonic() > deadline:
            break
        assert answer.status_code == 503 and answer.json()["error"] == "STANDBY_TOO_FAR_BEHIND", answer.text
        assert answer.headers["retry-after"] == "1"
        time.sleep(0.2)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["served_by"] == standby and body["freshness"]["standby"] is True
    assert body["freshness"]["lag"] <= 10_000
    assert body["value"] == pages[page]  # caught up: the same committed count as the active
    assert running.get(url).status_code == 307  # without max_lag: the active answers


@pytest.mark.parametrize(("path", "status", "code"), [
    ("/v1/stores/nope/keys/a", 404, "UNKNOWN_STORE"),
    ("/v1/stores/page-counts/keys/never", 404, "KEY_NOT_FOUND"),
    ("/v1/stores/by-length/keys/five", 400, "KEY_REJECTED"),
    ("/v1/stores/by-length/keys/99999999999999999999999", 400, "KEY_REJECTED"),
    ("/v1/stores/page-counts/all?limit=1001", 400, "PAGE_TOO_LARGE"),
    ("/v1/stores/page-counts/all?limit=0", 400, "BAD_PARAMETER"),
    ("/v1/stores/page-counts/range?from=/b&to=/a", 400, "BAD_RANGE"),
    ("/v1/stores/page-counts/range?from=/a", 400, "BAD_PARAMETER"),
    ("/v1/stores/page-counts/all?cursor=***", 400, "BAD_CURSOR"),
    ("/v1/stores/page-counts/all?task=9_0", 400, "BAD_TASK"),
    ("/v1/stores/page-counts/all?task=0_3", 400, "BAD_TASK"),
    ("/v1/stores/by-length/all?task=0_0", 400, "BAD_TASK"),
    ("/v1/stores/page-windows/windows/a?from=10&to=5", 400, "BAD_RANGE"),
    ("/v1/stores/page-windows/windows/a?from=-1", 400, "BAD_PARAMETER"),
    (f"/v1/stores/page-windows/windows/a?to={INT64_MAX + 1}", 400, "BAD_PARAMETER"),
    ("/v1/stores/page-windows/keys/a", 400, "WRONG_STORE_KIND"),
    ("/v1/stores/page-counts/windows/a", 400, "WRONG_STORE_KIND"),
    ("/v1/stores/page-counts/keys/a?max_lag=-3", 400, "BAD_PARAMETER"),
    ("/v1/stores/page-counts/keys/a?route=sideways", 400, "BAD_PARAMETER"),
    ("/v1/nothing-here", 404, "NOT_FOUND"),
    ("/v1/stores/", 404, "NOT_FOUND"),
])
def test_bad_requests_get_a_json_4xx(running: Running, path: str, status: int, code: str) -> None:
    if "route=" not in path:  # wherever the key lives, this host answers (or its owner, through it)
        path += ("&" if "?" in path else "?") + "route=proxy"
    answer = running.get(f"{running.url()}{path}")
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["error"] == code and body["message"]
    assert "Traceback" not in answer.text


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != SECRET_ENV} | (env or {})
    return subprocess.run([sys.executable, "-m", "streams_rt.cli", *args], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2], env=environment)


def test_the_cli_looks_a_key_up_through_any_host(running: Running) -> None:
    pages, _, _ = references(running.views)
    page = PAGES[3]
    secret = running.app.coordinator.secret
    assert secret is not None
    done = cli("query", "page-counts", page, "--url", running.url(1), env=secret.environment())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == pages[page]
    # By application id: the secret from the coordinator file the driver wrote (state.dir's default).
    by_app = cli("query", "page-counts", page, "--url", running.url(), "-a", running.app.application_id)
    assert by_app.returncode == 0 and json.loads(by_app.stdout)["value"] == pages[page], by_app.stderr
    missing = cli("query", "nope", "x", "--url", running.url(), env=secret.environment())
    assert missing.returncode == 1 and missing.stderr.startswith("Error: 404 UNKNOWN_STORE"), missing.stderr
    refused = cli("query", "page-counts", page, "--url", running.url())
    assert refused.returncode == 1 and refused.stderr.startswith("Error: 401 UNAUTHENTICATED"), refused.stderr


@pytest.mark.parametrize("path", ["/v1/metadata", "/v1/stores/page-counts/keys/x", "/metrics", "/openapi.json"])
def test_every_path_takes_the_runs_secret(running: Running, path: str) -> None:
    """rpc.authenticate (the default): no request is answered without the secret, metrics included."""
    for headers in ({}, bearer_headers(SharedSecret.generate()), {"authorization": "Basic eA=="}):
        answer = httpx.get(f"{running.url()}{path}", headers=headers, timeout=10)
        assert answer.status_code == 401 and answer.json()["error"] == "UNAUTHENTICATED", (headers, answer.text)
        assert answer.headers["www-authenticate"] == "Bearer"
    assert running.get(f"{running.url()}{path}", timeout=10).status_code in (200, 307, 404)


def _openapi_requests(document: dict[str, Any]) -> st.SearchStrategy[tuple[str, dict[str, str], str]]:
    """(path, query, operation's 200 schema name) with every parameter the document names filled with
    text of any kind: valid keys and numbers, malformed ones, or left out."""
    values = st.one_of(st.sampled_from(PAGES), st.text(max_size=30), st.integers(-5, 10**20).map(str),
                       st.sampled_from(["", "0", "1001", "proxy", "redirect", "%", "/", "..", "AQ", "-1"]))
    operations = []
    for path, item in document["paths"].items():
        op = item["get"]
        schema = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        operations.append((path, [(p["name"], p["in"]) for p in op.get("parameters", [])], schema))

    @st.composite
    def request(draw: st.DrawFn) -> tuple[str, dict[str, str], str]:
        path, parameters, schema = draw(st.sampled_from(operations))
        query: dict[str, str] = {}
        for name, where in parameters:
            if where == "path":
                text = draw(st.one_of(st.sampled_from(["page-counts", "page-windows", "by-length"]), values)
                            if name == "store" else values)
                path = path.replace(f"{{{name}}}", quote(text, safe="") or "x")
            elif draw(st.booleans()):
                query[name] = draw(values)
        return path, query, schema

    return request()


def test_a_thousand_generated_requests_get_no_5xx_but_the_documented_503(running: Running) -> None:
    document = running.get(f"{running.url()}/openapi.json").json()
    components = document["components"]["schemas"]
    seen: Counter[int] = Counter()
    with httpx.Client(base_url=running.url(), timeout=30, headers=running.headers) as http:

        @settings(max_examples=1_000, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
        @given(_openapi_requests(document))
        def ask(request: tuple[str, dict[str, str], str]) -> None:
            path, query, schema = request
            answer = http.get(path, params=query)
            seen[answer.status_code] += 1
            assert answer.status_code < 500 or answer.status_code == 503, (path, query, answer.text)
            body = answer.json()
            if answer.status_code == 200:
                missing = set(components[schema].get("required", [])) - set(body)
                assert not missing, (path, query, missing)
            elif answer.status_code != 307:
                assert body["error"] and body["message"], body
                if answer.status_code == 503:
                    assert answer.headers["retry-after"] == "1"

        ask()
    assert sum(seen.values()) >= 1_000
    assert seen[200] and seen[400] and seen[404], seen  # the generator reached answers and refusals alike

