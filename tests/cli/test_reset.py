"""`streams-rt reset` on a real application's topics and state (real broker, a real host process):
`--dry-run` deletes nothing, a refused confirmation deletes nothing, a confirmed reset deletes the
internal topics and the local state and keeps the input and output topics and other applications'
topics; a running application is refused."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.coordinator.discovery import CoordinatorFile, this_process
from streams_rt.kafka.dev_broker import BrokerInfo
from tests.cli.helpers import assert_one_error_line, streams_rt
from tests.kafka.helpers import free_port
from tests.tasks.test_host import LINES, Apps, drain

pytestmark = pytest.mark.broker



def topics(admin: AdminClient) -> set[str]:
    return set(admin.list_topics(timeout=30).topics)


def test_reset_deletes_internal_topics_and_local_state_after_confirmation(apps: Apps) -> None:
    apps.create_topics({"wc-lines": 2, "wc-counts": 2})
    apps.produce("wc-lines", [(f"line-{i}", line.encode(), 1_000 + i) for i, line in enumerate(LINES[:50])])
    app, loop = apps.start("word_count", hosts=1)
    drain(loop)
    app_id, state_dir = app.application_id, app.work_dir / "host-0" / "state"
    loop.close()
    app.close()
    apps.apps.clear()
    # Not internal topics of this application: another application's changelog, and a topic named
    # after the application but neither a changelog nor a repartition topic.
    kept = {f"other-{app_id}-counts-changelog", f"{app_id}-input"}
    for future in apps.admin.create_topics([NewTopic(t, 1, 1) for t in kept]).values():
        future.result()
    internal = {t for t in topics(apps.admin) if t.startswith(f"{app_id}-")} - kept
    assert internal == {f"{app_id}-words-repartition", f"{app_id}-word-counts-changelog",
                        f"{app_id}-streams-rt-batch-0-changelog", f"{app_id}-streams-rt-batch-1-changelog"}
    assert (state_dir / app_id).is_dir()
    args: list[str | Path] = ["reset", "--application-id", app_id, "--bootstrap-server", apps.bootstrap,
                              "--state-dir", state_dir]

    dry = streams_rt(*args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert sorted(line.removeprefix("Would delete internal topic ") for line in dry.stdout.splitlines()
                  if line.startswith("Would delete internal topic ")) == sorted(internal)
    assert f"Would delete local state {state_dir / app_id}" in dry.stdout
    assert "Dry run: nothing was deleted." in dry.stdout
    assert internal <= topics(apps.admin) and (state_dir / app_id).is_dir()

    refused = streams_rt(*args, input="n\n")
    assert refused.returncode == 1 and "Aborted!" in refused.stderr
    assert internal <= topics(apps.admin) and (state_dir / app_id).is_dir()

    done = streams_rt(*args, input="y\n")
    assert done.returncode == 0, done.stderr
    assert f"Application {app_id} reset: 4 topics and 1 local paths deleted." in done.stdout
    assert not (state_dir / app_id).exists()
    deadline = time.monotonic() + 30
    while internal & topics(apps.admin):
        assert time.monotonic() < deadline, internal & topics(apps.admin)
        time.sleep(0.2)
    assert {apps.topic("wc-lines"), apps.topic("wc-counts"), *kept} <= topics(apps.admin)

    again = streams_rt(*args, "--force")
    assert again.returncode == 0 and "Nothing to reset" in again.stdout


def test_reset_refuses_a_running_application(tmp_path: Path, kafka_broker: BrokerInfo) -> None:
    pid, started = this_process()
    CoordinatorFile("live", "grpc://127.0.0.1:1", None, pid, started, None, None).write(tmp_path)
    assert_one_error_line(
        streams_rt("reset", "-a", "live", "--bootstrap-server", kafka_broker.bootstrap_servers, "--state-dir", tmp_path,
                   "--force"),
        "application 'live' is running", f"pid {pid}", "stop it before resetting it")
    assert (tmp_path / "live.coordinator.json").exists()


def test_an_unreachable_broker_is_one_line(tmp_path: Path) -> None:
    """No librdkafka reconnect log, no traceback: one `Error:` line with librdkafka's reason."""
    result = streams_rt("reset", "-a", "gone", "--bootstrap-server", f"127.0.0.1:{free_port()}",
                        "--state-dir", tmp_path, "--force")
    assert_one_error_line(result, "cannot reach Kafka at 127.0.0.1:", "Connection refused", "dev-broker status")
    assert result.stdout == ""


def test_help() -> None:
    result = streams_rt("reset", "--help")
    assert result.returncode == 0
    assert all(option in result.stdout for option in ("--dry-run", "--force", "--state-dir", "--bootstrap-server"))
