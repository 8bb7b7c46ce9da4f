"""Whether a Kafka cluster answers, asked once and quietly, before anything is built on it. An
unreachable broker otherwise shows as hundreds of librdkafka log lines (every reconnect of every
client) and then a timeout somewhere deep: here it is one line, with librdkafka's own first reason."""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from streams_rt.kafka.broker_files import BrokerError

REACH_TIMEOUT_S = 15.0


class KafkaUnreachable(BrokerError):
    """No broker of `bootstrap.servers` answered a metadata request in time; the message says why. (Not
    kafka.offsets.BrokerUnreachable, which a running application retries: this one stops a start.)"""


def _silent_logger() -> logging.Logger:
    logger = logging.getLogger("streams_rt.kafka.reachability.librdkafka")
    logger.setLevel(logging.CRITICAL + 1)
    logger.propagate = False
    return logger


_SILENT = _silent_logger()


def quiet_client_config() -> dict[str, Any]:
    """Settings that keep a confluent-kafka client from logging (each refused connection is a line);
    for clients whose failures are reported otherwise, as one line."""
    return {"log_level": 0, "logger": _SILENT}


def unanswered(bootstrap: str, timeout_s: float) -> str | None:
    """None when a broker of `bootstrap` answers a metadata request within `timeout_s`; else why not,
    in librdkafka's words (its first error), or that it did not answer in time."""
    errors: list[str] = []

    def remember(error: KafkaError) -> None:
        if not errors:
            errors.append(error.str())

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 1000,
                              "error_cb": remember, **quiet_client_config()}  # callables: beyond the stub's types
    admin = AdminClient(config)
    try:
        admin.list_topics(timeout=timeout_s)
        return None
    except KafkaException as error:
        admin.poll(0)  # serves the error callback: librdkafka's first reason is the telling one
        return errors[0] if errors else error.args[0].str()
    except Exception as error:  # noqa: BLE001 - any failure means "no answer"; the reason is reported
        return str(error) or type(error).__name__


def require_broker(bootstrap: str, timeout_s: float = REACH_TIMEOUT_S) -> None:
    """Raise KafkaUnreachable, one line, when no broker of `bootstrap` answers within `timeout_s`."""
    reason = unanswered(bootstrap, timeout_s)
    if reason is not None:
        raise KafkaUnreachable(f"cannot reach Kafka at {bootstrap} (bootstrap.servers) within {timeout_s:.0f} s: "
                                f"{reason}; is the broker running? (`streams-rt dev-broker status` for the dev broker)")
