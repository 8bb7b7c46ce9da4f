"""An unreachable broker is one line naming the address and librdkafka's first reason, and nothing
is logged on the way (librdkafka logs every reconnect of every client by default)."""

from __future__ import annotations

import logging

import pytest

from streams_rt.kafka.reachability import KafkaUnreachable, require_broker, unanswered
from tests.kafka.helpers import free_port


def test_a_refused_connection_is_one_line_with_its_reason(caplog: pytest.LogCaptureFixture,
                                                          capfd: pytest.CaptureFixture[str]) -> None:
    bootstrap = f"127.0.0.1:{free_port()}"
    with caplog.at_level(logging.DEBUG), pytest.raises(KafkaUnreachable) as raised:
        require_broker(bootstrap, timeout_s=2)
    message = str(raised.value)
    assert "\n" not in message
    assert f"cannot reach Kafka at {bootstrap}" in message and "within 2 s" in message
    assert "Connection refused" in message
    assert not caplog.records
    out, err = capfd.readouterr()  # the process's own output: lines of other tests' clients may be there
    assert bootstrap not in out + err


def test_an_unknown_host_names_the_failed_lookup() -> None:
    reason = unanswered("no-such-host.invalid:9092", 2)
    assert reason is not None and "resolve" in reason.lower()
