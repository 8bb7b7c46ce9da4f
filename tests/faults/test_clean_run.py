"""The suite's baseline: with no fault, the verifier finds the application's outputs and final
state equal to the reference under both guarantees, and every invariant holds. A verifier that
passed everything would pass here too, so its own test (test_verifier.py) shows it failing."""

from __future__ import annotations

import pytest

from tests.faults.conftest import Runs
from tests.faults.harness import SummaryRow

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("guarantee", [pytest.param("at_least_once", marks=pytest.mark.faults),
                                       pytest.param("exactly_once_v2", marks=pytest.mark.faults_short)])
def test_a_clean_run_equals_the_reference(runs: Runs, summary: list[SummaryRow], guarantee: str) -> None:
    run = runs.start(guarantee, duration_s=5.0)
    run.settle(hosts=3)
    verdict = run.finish("none (clean run)", summary)
    assert verdict.passed, verdict.problems
    assert verdict.lost == 0 and verdict.duplicated == 0
    assert verdict.verified == verdict.produced == 20 * 250
