"""Every reference topology, run by Kafka Streams' own TopologyTestDriver and by ours on the same
generated scenarios: the records written to each output topic (key, value, timestamp, in order) and
the final contents of every store (values with their timestamps) must be equal. Caching off
(`statestore.cache.max.bytes=0`) emits every update; with caching on, both drivers still flush after
each piped record, so outputs compare too, and what caching changes shows (a delete of what the store
does not hold is neither written nor forwarded)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kstreams_oracle.oracle import Event, KafkaStreamsOracle, run_ours
from tests.kstreams_oracle.scenarios import events
from tests.kstreams_oracle.topologies import REFERENCES

pytestmark = pytest.mark.jvm

# 200 scenarios per topology in `make test`; ORACLE_EXAMPLES raises it for a longer run.
EXAMPLES = int(os.environ.get("ORACLE_EXAMPLES", 200))
ORACLE = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def test_every_reference_topology_has_both_twins(kstreams: KafkaStreamsOracle) -> None:
    assert kstreams.topologies() == list(REFERENCES)


def _scenario(name: str) -> st.SearchStrategy[list[Event]]:
    return events(list(REFERENCES[name].inputs))


@pytest.mark.parametrize("name", list(REFERENCES))
def test_outputs_and_stores_equal_kafka_streams(kstreams: KafkaStreamsOracle, name: str) -> None:
    @ORACLE
    @given(scenario=_scenario(name))
    def check(scenario: list[Event]) -> None:
        theirs = kstreams.run(name, scenario)
        assert theirs.error is None, f"Kafka Streams failed on the scenario: {theirs.error}"
        ours = run_ours(name, scenario)
        assert ours.outputs == theirs.outputs
        assert ours.stores == theirs.stores

    check()


@pytest.mark.parametrize("name", list(REFERENCES))
def test_outputs_and_stores_equal_kafka_streams_with_caching(kstreams: KafkaStreamsOracle, name: str) -> None:
    @settings(ORACLE, max_examples=max(EXAMPLES // 4, 20))
    @given(scenario=_scenario(name))
    def check(scenario: list[Event]) -> None:
        theirs = kstreams.run(name, scenario, caching=True)
        assert theirs.error is None, f"Kafka Streams failed on the scenario: {theirs.error}"
        ours = run_ours(name, scenario, caching=True)
        assert ours.stores == theirs.stores
        assert ours.outputs == theirs.outputs

    check()
