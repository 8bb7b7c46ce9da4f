"""The query endpoint on the network's terms, with real hosts on the real broker: with TLS on it
speaks HTTPS with the application's certificate, host to host too (a proxied read), and takes the
run's secret, so the secret never crosses in clear; bound beyond loopback without TLS, a host
refuses to start with one line naming iq.bind.host."""

from __future__ import annotations

import ssl
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
from streams_rt.rpc.http_auth import bearer_headers
from streams_rt.runtime.local import HostFailed, LocalApplication
from tests.iq.topologies import references
from tests.rpc.certificates import self_signed
from tests.tasks.test_host import FAST, drain

pytestmark = pytest.mark.broker

PAGES = [f"/page/{i}" for i in range(12)]


def make_topic(broker: BrokerInfo) -> str:
    topic = f"iq-views-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, 3, 1)]).values():
        future.result()
    return topic


@pytest.fixture
def tls_app(kafka_broker: BrokerInfo, tmp_path: Path) -> Iterator[tuple[LocalApplication, Path, list[tuple[str, int]]]]:
    topic = make_topic(kafka_broker)
    views = [(PAGES[i % len(PAGES)], i * 1_000) for i in range(300)]
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "partitioner": "murmur2_random"})
    for page, ts in views:
        producer.produce(topic, b"user", page.encode(), timestamp=ts)
    assert producer.flush(30) == 0
    cert, key = self_signed(tmp_path)
    properties: dict[str, Any] = {
        "application.id": f"iq-tls-{uuid.uuid4().hex[:8]}", "bootstrap.servers": kafka_broker.bootstrap_servers,
        "rpc.ssl.enabled": "true", "rpc.ssl.certificate.chain.location": str(cert),
        "rpc.ssl.private.key.location": str(key), "rpc.ssl.truststore.location": str(cert), **FAST}
    app = LocalApplication("tests.iq.topologies:page_views", properties, tmp_path / "app", hosts=2,
                           topology_args={"suffix": topic.removeprefix("iq-views")})
    loop = app.loop(max_records_per_task=1_000)
    try:
        app.wait_until_running(loop)
        drain(loop)
        yield app, cert, views
    finally:
        loop.close()
        app.close()


def test_with_tls_the_endpoint_speaks_https_host_to_host_too_and_takes_the_secret(
    tls_app: tuple[LocalApplication, Path, list[tuple[str, int]]]
) -> None:
    app, cert, views = tls_app
    pages, _, _ = references(views)
    endpoints = [str(h.query_endpoint) for h in app.hosts.values()]
    with Client(f"https://{endpoints[0]}", secret=app.coordinator.secret, truststore=cert) as client:
        assert {page: client.get("page-counts", page).value for page in PAGES} == dict(pages)
        assert dict(client.all("page-counts")) == dict(pages)
    headers, trusted = bearer_headers(app.coordinator.secret), ssl.create_default_context(cafile=str(cert))
    # A key its host does not own: proxied to the owner, over HTTPS with the secret.
    page = PAGES[0]
    owner_partition = partition_for(page.encode(), 3)
    meta = httpx.get(f"https://{endpoints[0]}/v1/metadata", headers=headers, verify=trusted).json()
    owner = next(h["endpoint"] for h in meta["hosts"] if f"0_{owner_partition}" in h["active_tasks"])
    other = next(e for e in endpoints if e != owner)
    url = f"https://{other}/v1/stores/page-counts/keys/{quote(page, safe='')}"
    proxied = httpx.get(url, params={"route": "proxy"}, headers=headers, verify=trusted)
    assert proxied.status_code == 200 and proxied.json()["value"] == pages[page], proxied.text
    moved = httpx.get(url, headers=headers, verify=trusted)
    assert moved.status_code == 307 and moved.headers["location"].startswith(f"https://{owner}/")
    assert httpx.get(url, verify=trusted).status_code == 401
    with pytest.raises(httpx.TransportError):  # in clear: no answer
        httpx.get(url.replace("https://", "http://"), headers=headers)
    with Client(f"https://{endpoints[0]}", truststore=cert) as anonymous, pytest.raises(QueryError) as refused:
        anonymous.get("page-counts", page)
    assert refused.value.status == 401 and refused.value.code == "UNAUTHENTICATED"


def test_beyond_loopback_in_clear_a_host_refuses_to_start_naming_the_key(
    kafka_broker: BrokerInfo, tmp_path: Path
) -> None:
    topic = make_topic(kafka_broker)
    properties = {"application.id": f"iq-open-{uuid.uuid4().hex[:8]}",
                  "bootstrap.servers": kafka_broker.bootstrap_servers, **FAST}
    app = LocalApplication("tests.iq.topologies:page_views", properties, tmp_path / "app", hosts=0,
                           topology_args={"suffix": topic.removeprefix("iq-views")})
    try:
        with pytest.raises(HostFailed) as failed:
            app.start_host("host-0", properties={"iq.bind.host": "0.0.0.0"})
        assert ("iq.bind.host=0.0.0.0: the interactive-query endpoint listens beyond loopback only with "
                "rpc.ssl.enabled=true") in str(failed.value)
    finally:
        app.close()
