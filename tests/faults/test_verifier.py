"""The verifier itself, with no services: it must pass the reference and fail every way an
application can be wrong (a lost record, a duplicate under exactly-once, a record beyond the
expected ones, a wrong final state), or the fault tests prove nothing."""

from __future__ import annotations

import copy
from collections.abc import Mapping

import pytest

from tests.faults.driver import Produced, random_workload, smoke_workload
from tests.faults.verifier import StateKey, StateSource, reference_updates, verify

pytestmark = pytest.mark.faults_short


def produced(records: list[tuple[str, int]]) -> list[Produced]:
    return [Produced(k, v, 1_700_000_000_000 + i * 7) for i, (k, v) in enumerate(records)]


PRODUCED = produced(smoke_workload(5, 40) + random_workload(50, 200))
REFERENCE = reference_updates(PRODUCED)


def state_of(outputs: Mapping[str, Mapping[StateKey, list[int]]]) -> StateSource:
    return lambda store: {key: values[-1] for key, values in outputs[store].items()}


def test_the_reference_passes_under_both_guarantees() -> None:
    for guarantee in ("at_least_once", "exactly_once_v2"):
        verdict = verify(guarantee, PRODUCED, REFERENCE, state_of(REFERENCE))
        assert verdict.passed, verdict.problems
        assert (verdict.produced, verdict.verified, verdict.lost, verdict.duplicated) == (400, 400, 0, 0)


def test_the_reference_recomputes_each_aggregate() -> None:
    values = [p.value for p in PRODUCED if p.key == "key-0"]
    assert REFERENCE["cnt"]["key-0"][-1] == len(values) == 40 + sum(1 for p in PRODUCED[200:] if p.key == "key-0")
    assert REFERENCE["sum"]["key-0"][-1] == sum(values)
    assert REFERENCE["min"]["key-0"] == [min(values[:i + 1]) for i in range(len(values))]
    assert sum(counts[-1] for counts in REFERENCE["wcnt"].values()) == len(PRODUCED)


def test_a_lost_record_fails_both_guarantees() -> None:
    outputs = copy.deepcopy(REFERENCE)
    outputs["echo"]["key-1"].pop()
    for name in ("cnt", "sum", "min", "max"):
        outputs[name]["key-1"].pop()
    for guarantee in ("at_least_once", "exactly_once_v2"):
        verdict = verify(guarantee, PRODUCED, outputs, state_of(outputs))
        assert verdict.lost == 1 and not verdict.passed
        assert any(p.startswith("cnt store") for p in verdict.problems), verdict.problems


def test_a_replayed_record_is_reported_under_at_least_once_and_fails_exactly_once() -> None:
    outputs = copy.deepcopy(REFERENCE)
    outputs["echo"]["key-2"].append(outputs["echo"]["key-2"][-1])
    outputs["cnt"]["key-2"].append(outputs["cnt"]["key-2"][-1] + 1)
    outputs["sum"]["key-2"].append(outputs["sum"]["key-2"][-1] + outputs["echo"]["key-2"][-1])
    alos = verify("at_least_once", PRODUCED, outputs, state_of(outputs))
    assert alos.passed, alos.problems
    assert (alos.lost, alos.duplicated) == (0, 1)
    eos = verify("exactly_once_v2", PRODUCED, outputs, state_of(outputs))
    assert not eos.passed and eos.duplicated == 1
    assert any("came out twice" in p for p in eos.problems)


def test_exactly_once_fails_on_a_record_beyond_the_expected_ones() -> None:
    outputs = copy.deepcopy(REFERENCE)
    outputs["wcnt"][("key-0", 0)] = [1]
    verdict = verify("exactly_once_v2", PRODUCED, outputs, state_of(REFERENCE))
    assert not verdict.passed
    assert any("never produced" in p for p in verdict.problems), verdict.problems


def test_a_wrong_final_state_fails_even_when_the_outputs_are_right() -> None:
    state = copy.deepcopy(REFERENCE)
    state["max"]["key-3"].append(state["max"]["key-3"][-1] + 1)
    for guarantee in ("at_least_once", "exactly_once_v2"):
        verdict = verify(guarantee, PRODUCED, REFERENCE, state_of(state))
        assert any(p.startswith("max store") for p in verdict.problems), verdict.problems
