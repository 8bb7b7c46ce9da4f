from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from tests.coordinator.harness import TASKS, TEST_SETTINGS, HostFactory


@pytest.fixture
def coordinator() -> Iterator[Coordinator]:
    c = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                    StreamsRoundPlanner(TASKS), settings=TEST_SETTINGS)
    yield c
    c.close()


@pytest.fixture
def hosts(coordinator: Coordinator, tmp_path: Path) -> Iterator[HostFactory]:
    factory = HostFactory(coordinator, tmp_path)
    yield factory
    factory.cleanup()
