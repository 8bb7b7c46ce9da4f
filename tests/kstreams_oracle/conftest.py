"""One Kafka Streams oracle JVM for the whole test session (start-up costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kstreams_oracle.oracle import KafkaStreamsOracle


@pytest.fixture(scope="session")
def kstreams() -> Iterator[KafkaStreamsOracle]:
    oracle = KafkaStreamsOracle()
    yield oracle
    oracle.close()
