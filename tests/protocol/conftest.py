"""The Kafka harness JVM, started once per test session (compiling it first if needed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.protocol.harness import KafkaJava


@pytest.fixture(scope="session")
def kafka_java() -> Iterator[KafkaJava]:
    # JvmSetupError (missing jars: "run `make jars`") propagates as a test error, never a skip.
    java = KafkaJava()
    try:
        yield java
    finally:
        java.close()
