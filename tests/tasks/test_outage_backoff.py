"""The state thread's waits while the broker is out of reach, without services: doubling up to a
cap, one log line when an outage starts and one when it ends, and back to the first wait after."""

from __future__ import annotations

import pytest

from streams_rt.state import ChangelogError
from streams_rt.tasks.state_thread import OutageBackoff


def test_waits_double_up_to_the_cap_with_one_line_per_outage(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", logger="streams_rt.tasks.state_thread")
    backoff = OutageBackoff()
    error = ChangelogError("app-store-changelog", 0, "offsets unavailable: _TRANSPORT", retriable=True)
    waits = [backoff.failed(error) for _ in range(6)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    backoff.passed()
    backoff.passed()  # no outage: nothing to say
    assert backoff.failed(error) == 0.5  # a new outage starts from the first wait again
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert "the broker cannot be reached (changelog app-store-changelog-0" in lines[0]
    assert lines[1].startswith("the broker answers again after ")
