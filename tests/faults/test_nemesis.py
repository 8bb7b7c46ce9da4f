"""The soak's nemesis schedule, pure: a seed replays it; every kind comes in a run long enough."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.faults.nemesis import KINDS, schedule


@given(st.integers(0, 2**32), st.floats(60, 3_600))
def test_a_seed_replays_its_schedule_and_the_faults_are_spaced(seed: int, duration_s: float) -> None:
    faults = schedule(seed, duration_s)
    assert faults == schedule(seed, duration_s)
    assert all(0 < f.at_s < duration_s - 20 for f in faults)
    assert all(b.at_s - a.at_s >= 15 for a, b in zip(faults, faults[1:], strict=False))
    if duration_s >= 150:
        assert {f.kind for f in faults} == set(KINDS)
