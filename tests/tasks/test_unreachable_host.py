"""Fast detection of a dead host, with real host processes on the real broker: a killed host's held
heartbeat drops its connection, or a reader that cannot connect to it reports it; the coordinator
probes it, finds it refusing connections and removes its member at once (session.timeout.ms is set
far beyond the test's waits, so only a probe can remove it); a report about a live host, or an
address no member serves, removes nothing; a report without the application's secret is refused."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.client import AuthenticationRefused, GroupClient
from streams_rt.rpc.messages import ReportUnreachableRequest, ReportUnreachableResponse
from streams_rt.runtime.batch_loop import task_status
from streams_rt.runtime.local import LocalApplication
from tests.tasks.test_host import Apps, drain, output_rows

pytestmark = pytest.mark.broker

# Far beyond every wait below: a member removed during the test was removed by a report.
LONG_SESSION = {"session.timeout.ms": 300_000}
WAIT_S = 60


@pytest.fixture
def apps(kafka_broker: BrokerInfo, tmp_path: Path) -> Iterator[Apps]:
    made = Apps(kafka_broker, tmp_path)
    yield made
    made.close()


def wait_for(condition: Callable[[], bool], what: str, caplog: pytest.LogCaptureFixture | None = None) -> None:
    """Fails naming `what`, with the coordinator's log so far when `caplog` is given."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {WAIT_S} s: {what}" + (
            f"; the coordinator's log:\n{caplog.text}" if caplog is not None else "")
        time.sleep(0.05)


def members_by_endpoint(app: LocalApplication) -> dict[str, str]:
    """endpoint -> member id, from the task owners the coordinator names."""
    with GroupClient(app.coordinator.address, secret=app.coordinator.secret) as client:
        _, statuses = task_status(client, app.application_id)
    return {str(s.endpoint): str(s.owner) for s in statuses.values() if s.endpoint and s.owner}


def report(app: LocalApplication, endpoint: str, secret: SharedSecret | None) -> ReportUnreachableResponse:
    with GroupClient(app.coordinator.address, secret=secret) as client:
        request = ReportUnreachableRequest(group_id=app.application_id, endpoint=endpoint,
                                           generation=app.coordinator.generation)
        response = client.call(request, ReportUnreachableResponse)
    response.raise_for_error()
    return response


def start(apps: Apps) -> tuple[LocalApplication, Any]:
    apps.create_topics({"nb-in": 2, "nb-out": 2})
    apps.produce("nb-in", [(f"k{i}", i.to_bytes(8, "big"), 1_000 + i) for i in range(10)])
    return apps.start("numbers", hosts=2, **LONG_SESSION)


def test_a_killed_host_is_removed_at_once_while_a_reader_calls_it_and_its_tasks_move(
    apps: Apps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="streams_rt.coordinator")
    app, loop = start(apps)
    assert sorted(drain(loop)) == sorted((f"k{i}", i * 2) for i in range(10))
    endpoint = str(app.hosts["host-0"].endpoint)
    victim = members_by_endpoint(app)[endpoint]
    generation = app.coordinator.generation
    app.stop_host("host-0", kill=True)
    apps.produce("nb-in", [(f"k{i}", i.to_bytes(8, "big"), 2_000 + i) for i in range(10, 20)])
    rows: list[tuple[Any, Any]] = []

    def run_until_removed() -> bool:
        """The batch loop is the reader here: its call to host-0 fails, it reports the endpoint."""
        rows.extend(output_rows(loop.run_once().rows()))
        return victim not in app.coordinator.describe()["members"]

    wait_for(run_until_removed, "the killed host's member removed", caplog)
    # Whichever sign came first: the heartbeat's dropped connection (usually), the reader's report,
    # or (killed between two heartbeats) no call from it.
    assert re.search(rf"member {victim} removed: its host at {re.escape(endpoint)} refuses connections "
                     r"\((its heartbeat's connection dropped|reported by a reader|no call from it for \d+ ms)\)",
                     caplog.text), caplog.text
    assert "session timeout" not in caplog.text
    rows += drain(loop)  # everything host-0 owned now runs on host-1: a new generation formed
    assert sorted(rows) == sorted((f"k{i}", i * 2) for i in range(10, 20))
    described = app.coordinator.describe()
    assert described["generation"] > generation and len(described["members"]) == 1
    assert set(app.owners(loop).values()) == {members_by_endpoint(app)[str(app.hosts["host-1"].endpoint)]}


def test_a_killed_host_is_removed_at_once_with_no_reader_calling_it(
    apps: Apps, caplog: pytest.LogCaptureFixture
) -> None:
    """No batch runs after the kill: the coordinator sees the host's held heartbeat lose its
    connection (or, killed between two heartbeats, sees it make no call), probes the host's endpoint
    and removes its member; its tasks move to host-1."""
    caplog.set_level("INFO", logger="streams_rt.coordinator")
    app, loop = start(apps)
    assert sorted(drain(loop)) == sorted((f"k{i}", i * 2) for i in range(10))
    endpoint = str(app.hosts["host-0"].endpoint)
    victim = members_by_endpoint(app)[endpoint]
    app.stop_host("host-0", kill=True)
    wait_for(lambda: victim not in app.coordinator.describe()["members"], "the killed host's member removed",
             caplog)
    assert re.search(rf"member {victim} removed: its host at {re.escape(endpoint)} refuses connections "
                     r"\((its heartbeat's connection dropped|no call from it for \d+ ms)\)", caplog.text), caplog.text
    assert "reported by a reader" not in caplog.text and "session timeout" not in caplog.text
    apps.produce("nb-in", [(f"k{i}", i.to_bytes(8, "big"), 2_000 + i) for i in range(10, 20)])
    assert sorted(drain(loop)) == sorted((f"k{i}", i * 2) for i in range(10, 20))
    assert set(app.owners(loop).values()) == {members_by_endpoint(app)[str(app.hosts["host-1"].endpoint)]}


def test_a_report_about_a_live_host_or_an_unknown_address_removes_nothing(
    apps: Apps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="streams_rt.coordinator")
    app, _ = start(apps)
    before = app.coordinator.describe()
    live = str(app.hosts["host-0"].endpoint)
    assert report(app, live, app.coordinator.secret).probing
    wait_for(lambda: f"probe of the host at {live} (reported by a reader): ANSWERS" in caplog.text,
             "the probe of the live host answered")
    assert not report(app, "grpc://127.0.0.1:1", app.coordinator.secret).probing  # no member serves it
    after = app.coordinator.describe()
    assert (after["generation"], sorted(after["members"])) == (before["generation"], sorted(before["members"]))
    assert "refuses connections" not in caplog.text


def test_a_report_without_the_runs_secret_is_refused_and_starts_no_probe(
    apps: Apps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="streams_rt.coordinator")
    app, _ = start(apps)
    before = app.coordinator.describe()
    endpoint = str(app.hosts["host-0"].endpoint)
    with pytest.raises(AuthenticationRefused):
        report(app, endpoint, SharedSecret.generate())
    time.sleep(1)  # a probe, had one started, logs its answer within milliseconds
    assert f"probe of the host at {endpoint}" not in caplog.text
    after = app.coordinator.describe()
    assert (after["generation"], sorted(after["members"])) == (before["generation"], sorted(before["members"]))


def test_a_killed_hosts_tasks_are_caught_up_at_their_standbys_host(apps: Apps) -> None:
    """What readers wait for rather than sit a batch out (TaskStatus.caught_up, see
    streams_rt/spark/refused_batch.py): host-1 held standbys of host-0's tasks, so the round after
    the kill gives it those tasks as caught up (word_count's stateless tasks always are)."""
    apps.create_topics({"wc-lines": 2, "wc-counts": 2})
    lines = [f"w{i % 13} w{i % 7}" for i in range(200)]
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(lines)])
    app, loop = apps.start("word_count", hosts=2, **LONG_SESSION, **{"num.standby.replicas": 1})
    drain(loop)
    endpoint = str(app.hosts["host-0"].endpoint)
    _, before = loop.status()
    moved = {t for t, s in before.items() if s.endpoint == endpoint}
    assert {t.subtopology for t in moved} == {0, 1}, before
    app.stop_host("host-0", kill=True)
    survivor = str(app.hosts["host-1"].endpoint)

    def moved_to_host_1() -> bool:
        _, statuses = loop.status()
        return all(statuses[t].endpoint == survivor for t in moved)

    wait_for(moved_to_host_1, "host-0's tasks owned and reported by host-1")
    _, after = loop.status()
    assert {t: after[t].caught_up for t in moved} == {t: True for t in moved}
