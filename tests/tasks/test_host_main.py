"""The task host's settings from its config file, resolved once against the configuration registry;
a bad or unknown key stops the host before anything starts, with one log line."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from streams_rt.config import ConfigError
from streams_rt.config.registry import DESERIALIZATION_EXCEPTION_HANDLER
from streams_rt.config.values import Choice
from streams_rt.tasks.execution.runner import DeserializationHandler
from streams_rt.tasks.host_main import host_settings, main

APP = {"application.id": "app", "bootstrap.servers": "localhost:9092"}


def host_file(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"properties": properties, "coordinator": "grpc://127.0.0.1:1", **extra}


def test_every_part_reads_the_same_resolved_properties() -> None:
    settings = host_settings(host_file({
        **APP, "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": "1024",
        "default.deserialization.exception.handler": "log_and_continue", "num.stream.threads": 3,
        "session.timeout.ms": 20_000, "max.records.per.task.per.batch": 10,
    }, bind_host="0.0.0.0", port=7))
    processing = settings.processing
    assert (processing.application_id, processing.exactly_once, processing.cache_max_bytes) == ("app", True, 1024)
    assert processing.deserialization_handler is DeserializationHandler.LOG_AND_CONTINUE
    assert (settings.member.num_stream_threads, settings.member.session_timeout_ms) == (3, 20_000)
    assert settings.member.coordinator_address == settings.coordinator_address == "grpc://127.0.0.1:1"
    assert (settings.bind_host, settings.port) == ("0.0.0.0", 7)


def test_the_handler_names_are_the_hosts() -> None:
    assert isinstance(DESERIALIZATION_EXCEPTION_HANDLER.type, Choice)
    assert set(DESERIALIZATION_EXCEPTION_HANDLER.type.choices) == {h.value for h in DeserializationHandler}


def test_the_instance_id_of_the_host_file_is_its_group_instance_id() -> None:
    assert host_settings(host_file(APP, instance_id="host-1")).member.group_instance_id == "host-1"
    same = host_file({**APP, "group.instance.id": "host-1"}, instance_id="host-1")
    assert host_settings(same).member.group_instance_id == "host-1"
    with pytest.raises(ConfigError, match="group.instance.id 'host-2' differs from the host's instance_id 'host-1'"):
        host_settings(host_file({**APP, "group.instance.id": "host-2"}, instance_id="host-1"))


def test_an_unknown_key_stops_the_host_with_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = tmp_path / "host.json"
    config.write_text(json.dumps(host_file({**APP, "sesion.timeout.ms": 1000}, topology="no_such_module:t")))
    with caplog.at_level(logging.ERROR):
        assert main(["--config", str(config)]) == 2
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage() == ("cannot start: unknown configuration key 'sesion.timeout.ms'; "
                                   "did you mean 'session.timeout.ms'?")


def test_a_malformed_log_level_stops_the_host_with_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """STREAMS_RT_LOG_LEVEL takes the driver's form (`INFO,streams_rt.state=DEBUG`) in the hosts too."""
    config = tmp_path / "host.json"
    config.write_text(json.dumps(host_file(APP, topology="no_such_module:t")))
    monkeypatch.setenv("STREAMS_RT_LOG_LEVEL", "INFO,streams_rt.state=LOUD")
    with caplog.at_level(logging.ERROR):
        assert main(["--config", str(config)]) == 2
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage() == ("cannot start: STREAMS_RT_LOG_LEVEL: unknown level 'LOUD' in "
                                   "'streams_rt.state=LOUD' (one of DEBUG, INFO, WARNING, ERROR, CRITICAL)")
