"""A broker bounce while processing, after Kafka's streams_broker_bounce_test: the application's only
broker stops (cleanly: SIGTERM, or hard: kill -9) and starts again on the same ports and data while
the batch loop keeps calling. The hosts and the loop ride the outage out (retrying, saying so in
their logs); once the broker is back, processing continues, and under exactly-once the outputs and
the state equal the reference exactly. The test has a broker of its own: the session's is shared."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams_rt.kafka.dev_broker import BrokerInfo, DevBroker
from tests.faults.harness import FaultRun, SummaryRow, bounce_broker

pytestmark = pytest.mark.broker
OUTAGE_S = 8.0


def run_with_bounces(own_broker: DevBroker, tmp_path: Path, summary: list[SummaryRow], guarantee: str,
                     bounces: list[bool], duration_s: float) -> None:
    """The smoke application through `bounces` (hard or not, in turn), the group settled after
    each; the verifier's verdict at the end (exact under exactly-once)."""
    info: BrokerInfo | None = own_broker.status()
    assert info is not None
    run = FaultRun(info.bootstrap_servers, tmp_path / "run", guarantee, duration_s=duration_s)
    try:
        run.settle(hosts=3)
        for hard in bounces:
            run.run_for(2)
            bounce_broker(run, own_broker, hard, OUTAGE_S)
            run.settle(hosts=3)
        kinds = ", ".join("kill -9" if hard else "clean" for hard in bounces)
        verdict = run.finish(f"broker bounce ({kinds})", summary)
    finally:
        run.close()
    assert verdict.passed, verdict.problems
    if guarantee == "exactly_once_v2":
        assert verdict.lost == 0 and verdict.duplicated == 0


@pytest.mark.parametrize("hard", [pytest.param(False, marks=pytest.mark.faults, id="clean"),
                                  pytest.param(True, marks=pytest.mark.faults_short, id="hard")])
def test_broker_bounce_while_processing_short(own_broker: DevBroker, tmp_path: Path, summary: list[SummaryRow],
                                              hard: bool) -> None:
    run_with_bounces(own_broker, tmp_path, summary, "exactly_once_v2", [hard], duration_s=25.0)


@pytest.mark.faults
@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_broker_bounce_clean_then_hard_while_processing(own_broker: DevBroker, tmp_path: Path,
                                                        summary: list[SummaryRow], guarantee: str) -> None:
    run_with_bounces(own_broker, tmp_path, summary, guarantee, [False, True], duration_s=45.0)
