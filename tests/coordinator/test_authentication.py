"""An authenticated control plane, with real processes: hosts started with the application run's
secret in their environment work; a process without it, or with another run's, is refused on every
action (describe, a static member's instance id, leave, fencing, shutdown) and changes nothing.
TLS is a switch of the same properties."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from streams_rt.coordinator.service import Coordinator, start_coordinator
from streams_rt.protocol import TaskId
from streams_rt.rpc.auth import SECRET_ENV, SharedSecret
from streams_rt.rpc.http_auth import bearer_headers
from streams_rt.rpc.transport import InsecureBindError
from streams_rt.tasks.streams_codec import StreamsMemberCodec
from tests.coordinator.harness import REPO, HostFactory, settled
from tests.rpc.certificates import self_signed

APP = {"application.id": "app", "bootstrap.servers": "localhost:9092"}


def raw_calls(address: str, calls: list[tuple[str, dict[str, Any]]], secret: SharedSecret | None,
              tls_root_certs: Path | None = None) -> list[dict[str, Any]]:
    """Make `calls` from another OS process whose environment holds `secret` (or none)."""
    env = {k: v for k, v in os.environ.items() if k != SECRET_ENV}
    env.update(secret.environment() if secret else {})
    tls = ["--tls-root-certs", str(tls_root_certs)] if tls_root_certs is not None else []
    argv = [sys.executable, "-m", "tests.coordinator.raw_client", "--coordinator", address, *tls, json.dumps(calls)]
    out = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def attacks(member_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Everything someone who can reach the port could try: read the group, take over static member
    a's instance id, fence it, make it leave, switch the protocol, stop the application, have the
    coordinator probe an address."""
    user_data = base64.b64encode(StreamsMemberCodec(uuid.uuid4()).encode_subscription(11, frozenset(), frozenset()))
    return [
        ("describe", {"group_id": "app"}),
        ("join", {"group_id": "app", "member_id": "", "protocol": "COOPERATIVE", "user_data": user_data.decode(),
                  "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "group_instance_id": "a"}),
        ("heartbeat", {"group_id": "app", "member_id": member_id, "generation": 99, "group_instance_id": "a"}),
        ("leave", {"group_id": "app", "member_id": member_id, "group_instance_id": "a"}),
        ("set_protocol", {"group_id": "app", "protocol": "EAGER"}),
        ("request_shutdown", {"group_id": "app", "reason": "taken over"}),
        ("report_unreachable", {"group_id": "app", "endpoint": "grpc://127.0.0.1:1", "generation": 1}),
    ]


@pytest.mark.parametrize("secret", [None, SharedSecret.generate()], ids=["no-secret", "another-runs-secret"])
def test_calls_without_the_runs_secret_are_refused_and_change_nothing(
    coordinator: Coordinator, hosts: HostFactory, secret: SharedSecret | None
) -> None:
    live = [hosts.start("a", "--instance-id", "a", "--session-ms", "8000"), hosts.start("b")]
    before = settled(coordinator, live)
    (a_id,) = [mid for mid, m in before["members"].items() if m["instance_id"] == "a"]
    results = raw_calls(coordinator.address, attacks(a_id), secret)
    assert [r["outcome"] for r in results] == ["refused"] * len(attacks(a_id)), results
    assert all("does not carry this application's secret" in r["message"] for r in results)
    d = coordinator.describe()
    assert (d["state"], d["generation"]) == ("STABLE", before["generation"])
    assert sorted(d["members"]) == sorted(before["members"])
    assert d["members"][a_id]["instance_id"] == "a" and d["protocol_policy"]["override"] is None
    assert all(h.proc.poll() is None for h in live)
    assert not [e for h in live for e in h.events() if e["event"] in ("lost", "failed", "shutdown")]


def test_a_process_with_the_runs_secret_is_answered(coordinator: Coordinator) -> None:
    (result,) = raw_calls(coordinator.address, [("describe", {"group_id": "app"})], coordinator.secret)
    assert (result["outcome"], result["error"]) == ("answered", "NONE")


def test_tls_is_a_switch_of_the_same_properties(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    c = start_coordinator({
        **APP, "rpc.ssl.enabled": "true", "rpc.ssl.certificate.chain.location": str(cert),
        "rpc.ssl.private.key.location": str(key),
    }, [TaskId(0, 0)])
    try:
        assert c.address.startswith("grpc+tls://127.0.0.1:") and c.secret is not None
        describe = [("describe", {"group_id": "app"})]
        assert raw_calls(c.address, describe, c.secret, cert)[0]["outcome"] == "answered"
        assert raw_calls(c.address, describe, None, cert)[0]["outcome"] == "refused"
        assert raw_calls(c.address, describe, c.secret)[0]["outcome"] == "unavailable"  # untrusted certificate
        plaintext = c.address.replace("grpc+tls://", "grpc://")
        assert raw_calls(plaintext, describe, c.secret)[0]["outcome"] == "unavailable"
    finally:
        c.close()


def test_binding_beyond_loopback_without_a_secret_refuses_to_start() -> None:
    with pytest.raises(InsecureBindError) as e:
        start_coordinator({**APP, "coordinator.host": "0.0.0.0", "rpc.authenticate": "false"},
                          [TaskId(0, 0)])
    assert "\n" not in str(e.value) and "0.0.0.0" in str(e.value) and "rpc.authenticate" in str(e.value)


def test_without_rpc_authenticate_a_loopback_coordinator_takes_calls_without_a_secret() -> None:
    c = start_coordinator({**APP, "rpc.authenticate": "false"}, [TaskId(0, 0)])
    try:
        assert c.secret is None
        assert raw_calls(c.address, [("describe", {"group_id": "app"})], None)[0]["outcome"] == "answered"
    finally:
        c.close()


@pytest.mark.parametrize("key, value", [("coordinator.host", "0.0.0.0"), ("coordinator.http.host", "0.0.0.0")])
def test_beyond_loopback_without_tls_is_refused_even_with_the_secret(key: str, value: str) -> None:
    """With the secret but in clear, the secret would cross the network to whoever listens."""
    with pytest.raises(InsecureBindError) as e:
        start_coordinator({**APP, key: value}, [TaskId(0, 0)])
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{key}={value}: ") and "rpc.ssl.enabled=true" in message
    assert "rpc.authenticate" not in message  # that one is on


def test_with_tls_and_the_secret_every_port_may_face_the_network(tmp_path: Path) -> None:
    """Both ports bind 0.0.0.0; the HTTP endpoint speaks HTTPS with the same certificate and takes
    the secret: nothing crosses in clear, nothing answers without the secret."""
    cert, key = self_signed(tmp_path)
    c = start_coordinator({
        **APP, "coordinator.host": "0.0.0.0", "coordinator.http.host": "0.0.0.0", "rpc.ssl.enabled": "true",
        "rpc.ssl.certificate.chain.location": str(cert), "rpc.ssl.private.key.location": str(key),
        "rpc.ssl.truststore.location": str(cert),
    }, [TaskId(0, 0)])
    try:
        assert c.secret is not None and c.http_url is not None and c.http_url.startswith("https://0.0.0.0:")
        local = c.http_url.replace("0.0.0.0", "127.0.0.1")
        trusted = ssl.create_default_context(cafile=str(cert))
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{local}/api/status", context=trusted, timeout=10)
        assert refused.value.code == 401
        request = urllib.request.Request(f"{local}/api/status", headers=bearer_headers(c.secret))
        with urllib.request.urlopen(request, context=trusted, timeout=10) as answer:
            assert json.loads(answer.read())["application_id"] == "app"
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP to the TLS port: no answer
            urllib.request.urlopen(local.replace("https://", "http://") + "/api/status", timeout=10)
    finally:
        c.close()
