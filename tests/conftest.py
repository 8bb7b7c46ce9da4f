"""Session-wide fixtures: the real Kafka broker and real Spark sessions; `apps`, real applications
(task hosts as OS processes) on that broker."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from pyspark.sql import SparkSession

from streams_rt.kafka.dev_broker import BrokerInfo, DevBroker
from streams_rt.kafka.jvm import REPO_ROOT
from streams_rt.spark.session import build_session
from tests.tasks.test_host import Apps

# Property tests: in CI (CI set, as .ci/run does) every run draws the same examples, so a failure there
# reproduces anywhere with CI=true; elsewhere each run draws new ones and prints a blob to replay a failure.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Executors' Python workers unpickle test-defined classes by module name (tests.spark...).
_TEST_IMPORTS = {"spark.executorEnv.PYTHONPATH": str(REPO_ROOT)}
# The fixtures that start services, and the marker each gives its tests: `make test-fast` selects
# by markers, so a test that starts a broker or Spark can never pass for a pure one.
_SERVICE_FIXTURES = {"kafka_broker": "broker", "apps": "broker", "spark": "spark", "spark_cluster": "spark",
                     "spark_cluster_3": "spark"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in _SERVICE_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(_SERVICE_FIXTURES[fixture])


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerInfo]:
    """One real Apache Kafka broker (KRaft, loopback) for the whole test session."""
    broker = DevBroker(tmp_path_factory.mktemp("kafka-broker"))
    info = broker.start(owned=True)
    yield info
    broker.stop()


@pytest.fixture
def apps(kafka_broker: BrokerInfo, tmp_path: Path) -> Iterator[Apps]:
    """Applications a test starts on the real broker, each with its own id and topics; all closed after."""
    made = Apps(kafka_broker, tmp_path)
    yield made
    made.close()


class _SparkSessions:
    """At most one SparkContext lives in a Python process: switching master stops the old one."""

    def __init__(self) -> None:
        self.master: str | None = None
        self.session: SparkSession | None = None

    def get(self, master: str) -> SparkSession:
        if self.master != master:
            self.close()
            self.session = build_session(master, f"streams-rt-tests[{master}]", extra=_TEST_IMPORTS)
            self.master = master
        assert self.session is not None
        return self.session

    def close(self) -> None:
        if self.session is not None:
            self.session.stop()
        self.session, self.master = None, None


@pytest.fixture(scope="session")
def _spark_sessions() -> Iterator[_SparkSessions]:
    sessions = _SparkSessions()
    yield sessions
    sessions.close()


@pytest.fixture
def spark(_spark_sessions: _SparkSessions) -> SparkSession:
    """Spark in `local[2]`, shared by consecutive tests."""
    return _spark_sessions.get("local[2]")


@pytest.fixture
def spark_cluster(_spark_sessions: _SparkSessions) -> SparkSession:
    """Spark in `local-cluster[2,1,1024]`: two executor JVMs with real Python workers (30-50 s to
    start); tests using it carry the `local_cluster` marker and should sit in one module.

    Waits until both executors have registered: Spark only waits 30 s for them, and on a loaded
    machine a first job could otherwise run on one executor alone."""
    return _cluster(_spark_sessions, 2)


@pytest.fixture
def spark_cluster_3(_spark_sessions: _SparkSessions) -> SparkSession:
    """Spark in `local-cluster[3,1,1024]` (the fault suite's three executors), as `spark_cluster`."""
    return _cluster(_spark_sessions, 3)


def _cluster(sessions: _SparkSessions, executors: int) -> SparkSession:
    session = sessions.get(f"local-cluster[{executors},1,1024]")
    deadline = time.monotonic() + 120
    while _executor_count(session) < executors:
        if time.monotonic() > deadline:
            pytest.fail(f"only {_executor_count(session)} of {executors} executors registered within 120 s")
        time.sleep(0.5)
    return session


def _executor_count(session: SparkSession) -> int:
    """Registered executors (Spark's block manager list also holds the driver)."""
    return int(session.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1
