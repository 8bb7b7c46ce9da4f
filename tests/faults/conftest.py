"""The fault suite's fixtures and its summary: one line per fault (records produced, verified,
lost, duplicated; recovery time from the fault to the first output of the tasks it hit), printed
at the end of the pytest run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streams_rt.kafka.dev_broker import BrokerInfo, DevBroker
from tests.faults.harness import FaultRun, SummaryRow

SUMMARY = pytest.StashKey[list[SummaryRow]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SUMMARY] = []


@pytest.fixture
def summary(request: pytest.FixtureRequest) -> list[SummaryRow]:
    return request.config.stash[SUMMARY]


class Runs:
    """Fault runs made by a test, each closed at its end."""

    def __init__(self, bootstrap: str, tmp_path: Path) -> None:
        self.bootstrap, self.tmp_path = bootstrap, tmp_path
        self.made: list[FaultRun] = []

    def start(self, guarantee: str, **kwargs: Any) -> FaultRun:
        run = FaultRun(self.bootstrap, self.tmp_path / f"run-{len(self.made)}", guarantee, **kwargs)
        self.made.append(run)
        return run


@pytest.fixture
def runs(kafka_broker: BrokerInfo, tmp_path: Path) -> Iterator[Runs]:
    made = Runs(kafka_broker.bootstrap_servers, tmp_path)
    yield made
    for run in made.made:
        run.close()


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[DevBroker]:
    """A broker of the test's own, which it may stop, kill and start again (the session's is shared)."""
    broker = DevBroker(tmp_path / "own-broker")
    broker.start(owned=True)
    yield broker
    broker.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    rows = config.stash.get(SUMMARY, [])
    if not rows:
        return
    terminalreporter.section("fault suite summary")
    for row in rows:
        terminalreporter.write_line(row.line())
    failed = [row for row in rows if not row.verdict.passed]
    for row in failed:
        terminalreporter.write_line(f"FAILED {row.fault} [{row.guarantee}]: " + "; ".join(row.verdict.problems[:5]))
