"""`broker.json` is read strictly: a record that does not describe a broker is an error, never "no
broker", and a broker that still runs is never forgotten: its record stays, start and status refuse
with one line naming its pid, and stop still ends it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streams_rt.kafka.broker_files import BrokerInfo, UnreadableRecordError, read_record, write_record
from streams_rt.kafka.dev_broker import DevBroker
from tests.kafka.helpers import alive, assert_one_error_line, cli

_GOOD = {"pid": 4242, "port": 9092, "directory": "/d", "log_file": "/d/logs/server.log", "startup_seconds": 3.5}

# Written into broker.json; each gets the pid of the running broker (a string pid that names it is
# the reviewer's case: it used to make `stop` delete the record, then fail, leaving the broker running).
_UNREADABLE: dict[str, tuple[Callable[[Path, int], object], str]] = {
    "not JSON": (lambda path, pid: path.write_text("{not json"), "is not JSON"),
    "string pid": (lambda path, pid: _write(path, {**_GOOD, "pid": str(pid)}),
                   "pid must be a process id (1-4194303), not '"),
    "negative pid": (lambda path, pid: _write(path, {**_GOOD, "pid": -pid}),
                     "pid must be a process id (1-4194303), not -"),
    "huge pid": (lambda path, pid: _write(path, {**_GOOD, "pid": 10**30}), "not 1000000000000000000000000000000"),
    "missing fields": (lambda path, pid: _write(path, {"pid": pid}),
                       "lacks port, directory, log_file, startup_seconds"),
    "a directory": (lambda path, pid: path.mkdir(), "Is a directory"),
}


def _write(path: Path, record: object) -> None:
    path.write_text(json.dumps(record))


def _remove(path: Path) -> None:
    if path.is_dir():
        path.rmdir()
    else:
        path.unlink()


# ---- the record itself (no services) ----------------------------------------------------------
def test_a_written_record_reads_back(tmp_path: Path) -> None:
    info = BrokerInfo(pid=4242, port=9092, directory="/d ü", log_file="/d ü/logs/server.log", startup_seconds=3.25)
    write_record(tmp_path / "broker.json", info)
    assert read_record(tmp_path / "broker.json") == info
    assert read_record(tmp_path / "absent.json") is None


def test_keys_of_older_versions_are_ignored_and_whole_seconds_accepted(tmp_path: Path) -> None:
    _write(tmp_path / "broker.json", {**_GOOD, "startup_seconds": 3, "controller_port": 1, "started_at": 0.0})
    assert read_record(tmp_path / "broker.json") == BrokerInfo(pid=4242, port=9092, directory="/d",
                                                               log_file="/d/logs/server.log", startup_seconds=3.0)


@pytest.mark.parametrize(("content", "reason"), [
    (b"\xff\xfe", "is not UTF-8 text"),
    (b"", "is not JSON"),
    (b"[4242]", "holds [4242], not a JSON object"),
    (b"null", "holds None, not a JSON object"),
    (json.dumps({**_GOOD, "pid": 0}).encode(), "pid must be a process id (1-4194303), not 0"),
    (json.dumps({**_GOOD, "pid": 4194304}).encode(), "not 4194304"),
    (json.dumps({**_GOOD, "pid": True}).encode(), "not True"),
    (json.dumps({**_GOOD, "pid": 42.0}).encode(), "not 42.0"),
    (json.dumps({**_GOOD, "pid": "x" * 100}).encode(), "not '" + "x" * 36 + "..."),
    (json.dumps({**_GOOD, "port": 0}).encode(), "port must be 1-65535, not 0"),
    (json.dumps({**_GOOD, "port": "9092"}).encode(), "port must be 1-65535, not '9092'"),
    (json.dumps({**_GOOD, "directory": None}).encode(), "directory and log_file must be strings, not None"),
    (json.dumps({**_GOOD, "startup_seconds": float("nan")}).encode(),
     "startup_seconds must be a number of seconds, not nan"),
    (json.dumps({**_GOOD, "startup_seconds": -1}).encode(), "not -1"),
    (json.dumps({**_GOOD, "startup_seconds": False}).encode(), "not False"),
    (json.dumps({key: value for key, value in _GOOD.items() if key != "port"}).encode(), "lacks port"),
])
def test_an_invalid_record_is_an_error_naming_the_problem(tmp_path: Path, content: bytes, reason: str) -> None:
    (tmp_path / "broker.json").write_bytes(content)
    with pytest.raises(UnreadableRecordError) as error:
        read_record(tmp_path / "broker.json")
    assert reason in str(error.value) and str(tmp_path / "broker.json") in str(error.value)
    assert "\n" not in str(error.value)


# ---- through the CLI, with and without a running broker ----------------------------------------
@pytest.fixture
def running_broker(tmp_path: Path) -> Iterator[BrokerInfo]:
    broker = DevBroker(tmp_path / "broker")
    info = broker.start(owned=True)
    yield info
    if alive(info.pid):  # the test failed before stopping it
        if broker.files.record.exists():
            _remove(broker.files.record)
        broker.stop()


@pytest.mark.broker
def test_an_unreadable_record_never_forgets_a_running_broker(running_broker: BrokerInfo) -> None:
    directory = Path(running_broker.directory)
    record = directory / "broker.json"
    good = record.read_bytes()
    for case, (write_bad_record, reason) in _UNREADABLE.items():
        _remove(record)
        write_bad_record(record, running_broker.pid)
        bad = record.read_bytes() if record.is_file() else None
        for command in ("start", "status", "stop"):
            line = assert_one_error_line(cli(command, "--dir", directory), str(record), reason,
                                         f"the broker of this directory still runs as pid {running_broker.pid}")
            assert alive(running_broker.pid), (case, command, line)
            assert (record.read_bytes() if record.is_file() else None) == bad, (case, command, "the record changed")
            assert record.exists()
    _remove(record)
    record.write_bytes(good)
    assert DevBroker(directory).status() == running_broker, "a repaired record finds the broker again"


@pytest.mark.broker
def test_a_broker_whose_record_is_gone_is_refused_then_stopped(running_broker: BrokerInfo) -> None:
    """Following the advice of the unreadable-record error: delete the file, then stop."""
    directory = Path(running_broker.directory)
    (directory / "broker.json").unlink()
    not_recorded = f"runs as pid {running_broker.pid} but {directory / 'broker.json'} does not record it"
    assert_one_error_line(cli("status", "--dir", directory), not_recorded, "`streams-rt dev-broker stop` ends it")
    assert_one_error_line(cli("start", "--dir", directory), not_recorded)
    assert alive(running_broker.pid)
    stopped = cli("stop", "--dir", directory)
    assert stopped.returncode == 0 and stopped.stdout == "Kafka broker stopped\n", stopped
    assert not alive(running_broker.pid)
    status = cli("status", "--dir", directory)
    assert (status.returncode, status.stdout, status.stderr) == (1, "Kafka broker not running\n", "")


@pytest.mark.parametrize("case", sorted(_UNREADABLE))
def test_an_unreadable_record_without_a_broker_is_an_error_too(tmp_path: Path, case: str) -> None:
    write_bad_record, reason = _UNREADABLE[case]
    write_bad_record(tmp_path / "broker.json", 4242)
    for command in ("start", "status", "stop"):
        assert_one_error_line(cli(command, "--dir", tmp_path), reason,
                              "no broker of this directory runs, so the file can be deleted")
    assert (tmp_path / "broker.json").exists()
    assert not (tmp_path / "data").exists(), "start wrote or formatted nothing"
