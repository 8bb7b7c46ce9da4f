"""The coordinator's HTTP endpoint with real task hosts (OS processes) on the real broker: /metrics
carries Kafka's names and its values move across real rebalances (a host joins, a host leaves);
/api/status and the history say what moved; the coordinator file names the endpoint."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streams_rt.coordinator.discovery import read_coordinator_file
from streams_rt.coordinator.history import short_member_id
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.http_auth import bearer_headers
from streams_rt.runtime.local import LocalApplication
from tests.coordinator.settle import wait_until, wait_until_settled
from tests.tasks.test_host import LINES, Apps, drain

pytestmark = pytest.mark.broker

KIP_429 = ("rebalance_latency_avg", "rebalance_latency_max", "rebalance_latency_total", "rebalance_total",
           "rebalance_rate_per_hour", "failed_rebalance_total", "failed_rebalance_rate_per_hour",
           "last_rebalance_seconds_ago")
GROUP = ("generation", "group_state", "members", "assigned_tasks", "tasks", "records_lag")



Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def authorized(url: str, secret: SharedSecret | None) -> urllib.request.Request:
    """A request carrying the run's secret, as Prometheus is told to send it (`authorization`)."""
    return urllib.request.Request(url, headers=bearer_headers(secret))


def scrape(url: str, secret: SharedSecret | None) -> Samples:
    """Every sample of /metrics: (name, sorted labels) -> value."""
    with urllib.request.urlopen(authorized(f"{url}/metrics", secret), timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(f"streams_rt_coordinator_{name}", tuple(sorted(labels.items())))]


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


def status(url: str, secret: SharedSecret | None) -> dict[str, Any]:
    with urllib.request.urlopen(authorized(f"{url}/api/status", secret), timeout=10) as response:
        result: dict[str, Any] = json.loads(response.read())
    return result


def test_metrics_carry_kafkas_names_and_move_across_real_rebalances(apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"wc-lines": 3, "wc-counts": 3})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES)])
    app, loop = apps.start("word_count", hosts=2, **{"num.standby.replicas": 1,
                                                      "state.dir": str(tmp_path / "driver")})
    url = app.coordinator.http_url
    assert url is not None and url.startswith("http://127.0.0.1:")
    found = read_coordinator_file(tmp_path / "driver", app.application_id)
    assert (found.address, found.http) == (app.coordinator.address, url)
    assert found.secret == app.coordinator.secret.token if app.coordinator.secret else found.secret is None
    assert (tmp_path / "driver" / f"{app.application_id}.coordinator.json").stat().st_mode & 0o077 == 0
    drain(loop)
    wait_until_settled(app, 2)

    before = scrape(url, app.coordinator.secret)
    # records_lag samples the lags in the generation's subscriptions: both hosts joined the first
    # round together (group.initial.rebalance.delay.ms), with no state to report yet.
    assert {f"streams_rt_coordinator_{n}" for n in KIP_429 + GROUP if n != "records_lag"} <= names(before)
    assert value(before, "members") == 2 and value(before, "group_state", state="STABLE") == 1
    assert value(before, "rebalance_total") >= 1 and value(before, "rebalance_latency_max") > 0
    tasks = len(app.topology.layout(app.application_id, app.partitions).tasks())
    assert value(before, "tasks", state="RUNNING") == tasks
    first = status(url, app.coordinator.secret)
    active_before = sum(value(before, "assigned_tasks", member=h["name"], type="active") for h in first["hosts"])
    assert active_before == tasks

    app.start_host("host-2")
    # Stable with the third host and every task running; warm-ups may remain: a standby opened a
    # moment before a round can report its offsets as unknown, and its warm-up then waits for the
    # probing rebalance (minutes), which this test is not about.
    wait_until(app, lambda s: s["state"] == "STABLE" and len(s["hosts"]) == 3
               and all(t["state"] == "RUNNING" for t in s["tasks"]))
    joined = scrape(url, app.coordinator.secret)
    assert value(joined, "members") == 3
    assert value(joined, "generation") > value(before, "generation")
    assert value(joined, "rebalance_total") > value(before, "rebalance_total")
    assert value(joined, "rebalance_latency_total") > value(before, "rebalance_latency_total")
    after = status(url, app.coordinator.secret)
    (new,) = [h for h in after["hosts"] if h["member"] not in {old["member"] for old in first["hosts"]}]
    assert sum(value(joined, "assigned_tasks", member=new["name"], type=kind)
               for kind in ("active", "standby")) > 0
    # The history says why the round started and that tasks moved to the new host.
    later = [e for e in after["rebalances"] if e["generation"] > first["generation"]]
    assert any(f"new member {new['member']} joined" in e["reason"] for e in later)
    assert any(m["to"] == new["name"] for e in later for m in e["moves"])
    # Lags as the hosts reported them when the generation formed, one sample per reporting replica.
    hosts = {h["member"]: h["name"] for h in after["hosts"]}
    reported = {(t["task"], hosts[m], kind): lag for t in after["tasks"] for m, lag in t["lags"].items()
                for kind in ("active", "standby", "warmup") if m in ([t["active"]] if kind == "active" else t[kind])}
    assert {task for task, _, _ in reported} == {"1_0", "1_1", "1_2"}  # the word counts' store; 0_* is stateless
    assert {(t, m, k): value(joined, "records_lag", task=t, member=m, type=k) for t, m, k in reported} == reported
    assert all(lag >= -1 for lag in reported.values())

    generation = value(joined, "generation")
    app.stop_host("host-0")
    wait_until_settled(app, 2)
    left = scrape(url, app.coordinator.secret)
    assert value(left, "members") == 2 and value(left, "generation") > generation
    assert value(left, "last_rebalance_seconds_ago") >= 0
    rebalances = status(url, app.coordinator.secret)["rebalances"]
    assert any("left" in e["reason"] for e in rebalances if e["generation"] > generation)


def test_the_http_endpoint_and_its_file_go_with_the_coordinator(apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"nb-in": 1, "nb-out": 1})
    app, loop = apps.start("numbers", hosts=1, **{"state.dir": str(tmp_path / "driver")})
    url = app.coordinator.http_url
    assert url is not None and status(url, app.coordinator.secret)["application_id"] == app.application_id
    hosts = status(url, app.coordinator.secret)["hosts"]
    assert short_member_id(hosts[0]["member"]) == hosts[0]["name"]
    loop.close()
    app.close()
    apps.apps.clear()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/metrics", timeout=5)
    assert not (tmp_path / "driver" / f"{app.application_id}.coordinator.json").exists()


def test_the_data_takes_the_runs_secret_and_the_page_does_not(apps: Apps, tmp_path: Path) -> None:
    """rpc.authenticate (the default): /metrics and /api/status answer 401 without the secret (the
    refusals logged once a minute); the page holds nothing and is served, then asks for it."""
    apps.create_topics({"nb-in": 1, "nb-out": 1})
    app, _ = apps.start("numbers", hosts=1, **{"state.dir": str(tmp_path / "driver")})
    url = app.coordinator.http_url
    assert url is not None and app.coordinator.secret is not None
    for path in ("/metrics", "/api/status"):
        for secret in (None, SharedSecret.generate()):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(authorized(url + path, secret), timeout=10)
            assert refused.value.code == 401 and refused.value.headers["WWW-Authenticate"] == "Bearer"
            assert json.loads(refused.value.read())["error"] == "UNAUTHENTICATED"
    with urllib.request.urlopen(url + "/", timeout=10) as page:
        assert 'id="secret-form"' in page.read().decode()
    assert status(url, app.coordinator.secret)["application_id"] == app.application_id


def test_the_endpoint_can_be_switched_off(apps: Apps, tmp_path: Path) -> None:
    apps.create_topics({"nb-in": 1, "nb-out": 1})
    app = LocalApplication("tests.tasks.topologies:numbers", {
        "application.id": "off-" + apps.suffix, "bootstrap.servers": apps.bootstrap,
        "coordinator.http.enabled": "false", "state.dir": str(tmp_path / "driver"),
    }, tmp_path / "off", hosts=0, topology_args={"suffix": f"-{apps.suffix}"})
    try:
        assert app.coordinator.http_url is None
        assert read_coordinator_file(tmp_path / "driver", app.application_id).http is None
    finally:
        app.close()
