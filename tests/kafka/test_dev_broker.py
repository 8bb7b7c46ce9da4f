"""The development broker is a real Apache Kafka broker: it starts, serves topics, restarts with its
data, is found again instead of started twice, dies with its owner, and fails clearly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from streams_rt.kafka.broker_files import new_cluster_id
from streams_rt.kafka.dev_broker import BrokerError, BrokerInfo, DevBroker
from streams_rt.kafka.jvm import JvmSetupError
from tests.kafka.helpers import alive, assert_one_error_line, cli, create_topic, round_trip, topics

pytestmark = pytest.mark.broker


def test_records_round_trip_through_a_new_topic(kafka_broker: BrokerInfo) -> None:
    topic = f"round-trip-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker.bootstrap_servers, topic)
    assert topic in topics(kafka_broker.bootstrap_servers)
    assert round_trip(kafka_broker.bootstrap_servers, topic, 1000) == [f"v{i}".encode() for i in range(1000)]


def test_topics_keep_records_with_old_timestamps(kafka_broker: BrokerInfo) -> None:
    """Tests write records stamped in 1970: with Kafka's default retention (7 days by record time)
    the broker's retention check deleted them mid-test (the source of the flaky "no rows" tests)."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    topic = f"old-timestamps-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker.bootstrap_servers, topic)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    config = admin.describe_configs([resource])[resource].result(timeout=30)
    assert config["retention.ms"].value == "-1"


def test_second_start_reuses_the_running_broker(kafka_broker: BrokerInfo) -> None:
    again = DevBroker(kafka_broker.directory).start()
    assert (again.pid, again.port) == (kafka_broker.pid, kafka_broker.port)
    assert again.reused and not kafka_broker.reused


def test_a_broker_json_from_an_older_version_is_still_read(kafka_broker: BrokerInfo) -> None:
    """Older versions also recorded `controller_port` and `started_at`; their running broker must still
    be found (else a start would launch a second JVM on the same data)."""
    state_file = Path(kafka_broker.directory) / "broker.json"
    current = state_file.read_text()
    state_file.write_text(json.dumps({**json.loads(current), "controller_port": 1, "started_at": 0.0}))
    try:
        assert DevBroker(kafka_broker.directory).status() == kafka_broker
    finally:
        state_file.write_text(current)


def test_cli_start_status_stop_then_restart_keeps_data(tmp_path: Path) -> None:
    directory = ["--dir", str(tmp_path / "broker")]
    try:
        started = cli("start", *directory)
        assert started.returncode == 0, started.stderr
        assert "running at 127.0.0.1:" in started.stdout
        status = cli("status", *directory)
        assert status.returncode == 0 and "running at" in status.stdout
        again = cli("start", *directory)
        assert again.returncode == 0, again.stderr
        assert "already running" in again.stdout
        info = DevBroker(tmp_path / "broker").status()
        assert info is not None
        create_topic(info.bootstrap_servers, "kept-across-restart")
    finally:
        stopped = cli("stop", *directory)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not alive(info.pid)
    assert cli("status", *directory).returncode == 1

    restarted_broker = DevBroker(tmp_path / "broker")
    restarted = restarted_broker.start()
    try:
        assert restarted.pid != info.pid
        assert restarted.port == info.port, "a restarted broker keeps its free port"
        assert "kept-across-restart" in topics(restarted.bootstrap_servers)
    finally:
        assert restarted_broker.stop()


def test_a_broker_that_does_not_answer_stays_recorded_and_stoppable(tmp_path: Path) -> None:
    """A SIGSTOPped broker misses the metadata probe but is alive: status must say so (not "not
    running"), start must not launch a second JVM on its data, and stop must still end it."""
    directory = ["--dir", str(tmp_path / "broker")]
    broker = DevBroker(tmp_path / "broker")
    info = broker.start(owned=True)
    try:
        os.kill(info.pid, signal.SIGSTOP)
        status = cli("status", *directory)
        assert status.returncode == 2, (status.stdout, status.stderr)
        assert f"(pid {info.pid}) is running but not answering" in status.stdout
        with pytest.raises(BrokerError, match="does not answer"):
            broker.start()
        os.kill(info.pid, signal.SIGCONT)
        stopped = cli("stop", *directory)
        assert stopped.returncode == 0 and "Kafka broker stopped" in stopped.stdout, stopped.stderr
        assert not alive(info.pid)
    finally:
        if alive(info.pid):
            os.kill(info.pid, signal.SIGCONT)
            broker.stop()


def test_cli_start_resolves_a_relative_dir_and_ignores_a_garbage_ports_file(tmp_path: Path) -> None:
    (tmp_path / "broker").mkdir()
    (tmp_path / "broker" / "ports.json").write_text("{not json")
    try:
        started = cli("start", "--dir", "broker", cwd=tmp_path)
        assert started.returncode == 0, started.stderr
        assert "running at 127.0.0.1:" in started.stdout
        assert "ignoring unreadable" in started.stderr and "Traceback" not in started.stderr
        info = DevBroker(tmp_path / "broker").status()
        assert info is not None and info.answering
        assert info.directory == str((tmp_path / "broker").resolve())
    finally:
        stopped = cli("stop", "--dir", "broker", cwd=tmp_path)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    assert not alive(info.pid)


def test_owned_broker_stops_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = ("import sys, time\n"
              "from streams_rt.kafka.dev_broker import DevBroker\n"
              "info = DevBroker(sys.argv[1]).start(owned=True)\n"
              "print(info.pid, flush=True)\n"
              "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "owned")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert parent.stdout is not None and parent.stderr is not None
    try:
        line = parent.stdout.readline()
        if not line:
            parent.wait(timeout=30)
            pytest.fail(f"the owning process exited before starting the broker:\n{parent.stderr.read()}")
        broker_pid = int(line)
        assert alive(broker_pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 60
    while alive(broker_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(broker_pid), "the broker outlived the process that owned it"


def test_invalid_port_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BrokerError, match="1-65535"):
        DevBroker(tmp_path, port=70000).start()


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BrokerError, match=f"port {port} .* already in use"):
            DevBroker(tmp_path, port=port).start()


def test_missing_java_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(JvmSetupError, match="apt-get install"):
        DevBroker(tmp_path, java=str(tmp_path / "no-such-java")).start()


def test_missing_jars_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(JvmSetupError, match="make jars"):
        DevBroker(tmp_path, libs=tmp_path / "empty").start()


def test_cli_error_is_one_line_without_traceback(tmp_path: Path) -> None:
    result = cli("start", "--dir", tmp_path, "--port", "70000")
    assert result.returncode == 1
    assert result.stderr.strip() == "Error: port must be 0 (any free port) or 1-65535, not 70000"


def test_cli_start_in_an_impossible_dir_is_one_line() -> None:
    assert_one_error_line(cli("start", "--dir", "/proc/nope"), "/proc/nope")


def test_cluster_ids_never_start_with_a_dash() -> None:
    """The storage tool parses an id starting with '-' as an option; 1 in 64 raw ids would."""
    ids = [new_cluster_id() for _ in range(5000)]
    assert not any(i.startswith("-") for i in ids)
    assert all(len(i) == 22 for i in ids)
