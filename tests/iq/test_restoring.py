"""A store that restores answers 503 with its progress and a Retry-After header, then the restored
value: a real host process, killed with its state removed, restarted on the real broker."""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.rpc.http_auth import bearer_headers
from streams_rt.runtime.local import LocalApplication
from tests.tasks.test_host import FAST, drain

pytestmark = pytest.mark.broker

RECORDS = 400_000


def test_a_restoring_store_answers_503_with_progress_then_the_value(kafka_broker: BrokerInfo, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic = f"iq-table-{suffix}"
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result()
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "linger.ms": 20})
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(topic, f"v{i}".encode(), f"k{i:07d}".encode())
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    properties = {"application.id": f"iq-restore-{suffix}", "bootstrap.servers": kafka_broker.bootstrap_servers,
                  **FAST}
    app = LocalApplication("tests.iq.topologies:table", properties, tmp_path / "app", hosts=1,
                           topology_args={"suffix": f"-{suffix}"})
    loop = app.loop(max_records_per_task=RECORDS)
    try:
        app.wait_until_running(loop)
        drain(loop)
        app.stop_host("host-0", kill=True)
        shutil.rmtree(tmp_path / "app" / "host-0" / "state")  # the whole table restores from its changelog
        host = app.start_host("host-0")
        assert host.query_endpoint is not None
        url = f"http://{host.query_endpoint}/v1/stores/table/keys/k{RECORDS - 1:07d}"
        seen: list[tuple[int, dict[str, object], str | None]] = []
        deadline = time.monotonic() + 120
        with httpx.Client(timeout=10, headers=bearer_headers(app.coordinator.secret)) as http:
            while time.monotonic() < deadline:
                answer = http.get(url)
                seen.append((answer.status_code, answer.json(), answer.headers.get("retry-after")))
                if answer.status_code == 200:
                    break
                time.sleep(0.005)
        status, body, _ = seen[-1]
        assert status == 200 and body["value"] == f"v{RECORDS - 1}", seen[-3:]
        restoring = [(b, retry) for s, b, retry in seen if s == 503 and b["error"] == "RESTORING"]
        assert restoring, {s: b.get("error") for s, b, _ in seen}  # the restore was watched
        for body, retry in restoring:
            assert retry == "1"
            assert 0 <= float(str(body["progress"])) <= 1 and body["task"] == "0_0"
        # once the reader has started (the first poll), the progress counts records
        assert any(int(str(b["remaining"])) > 0 for b, _ in restoring), restoring[-3:]
        others = {b["error"] for s, b, _ in seen[:-1] if not (s == 503 and b["error"] == "RESTORING")}
        assert others <= {"NOT_AVAILABLE"}, others  # before the assignment: the task has no host yet
    finally:
        loop.close()
        app.close()
