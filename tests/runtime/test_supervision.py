"""The host supervision core, pure: when a dead host restarts, how restarts back off, and what is
never restarted; and its driver with injected hosts and a clock that tests move."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

import pytest

from streams_rt.runtime.host_supervisor import HostSupervisor, describe_exit
from streams_rt.runtime.supervision import Phase, Supervision


def test_a_dead_host_restarts_after_the_first_back_off() -> None:
    s = Supervision(backoff_ms=1_000, max_backoff_ms=8_000)
    s.started("h", 0)
    death = s.exited("h", 5_000)
    assert (death.restart_in_ms, death.attempt) == (1_000, 1)
    assert s.due(5_999) == [] and s.due(6_000) == ["h"]
    assert s.phase("h") is Phase.STARTING and s.due(7_000) == []  # handed out once
    s.started("h", 6_500)
    assert s.phase("h") is Phase.RUNNING


def test_deaths_in_a_row_double_the_back_off_up_to_its_cap() -> None:
    s = Supervision(backoff_ms=1_000, max_backoff_ms=5_000, stable_after_ms=60_000)
    s.started("h", 0)
    delays, now = [], 0
    for _ in range(5):
        death = s.exited("h", now)
        delays.append(death.restart_in_ms)
        now += death.restart_in_ms
        assert s.due(now) == ["h"]
        s.started("h", now)
        now += 10  # dies at once again
    assert delays == [1_000, 2_000, 4_000, 5_000, 5_000]


def test_a_failed_restart_backs_off_too() -> None:
    s = Supervision(backoff_ms=1_000, max_backoff_ms=60_000)
    s.started("h", 0)
    s.exited("h", 0)
    assert s.due(1_000) == ["h"]
    assert s.start_failed("h", 2_000) == 2_000
    assert s.due(3_999) == [] and s.due(4_000) == ["h"]


def test_a_stable_run_starts_the_back_off_over() -> None:
    s = Supervision(backoff_ms=1_000, max_backoff_ms=60_000, stable_after_ms=60_000)
    s.started("h", 0)
    s.exited("h", 10)
    s.due(2_000)
    s.started("h", 2_000)
    assert s.exited("h", 2_010).restart_in_ms == 2_000  # second death in a row
    s.due(10_000)
    s.started("h", 10_000)
    assert s.exited("h", 70_000).restart_in_ms == 1_000  # ran a minute: counted afresh


def test_a_host_stopped_on_purpose_is_never_restarted() -> None:
    s = Supervision()
    s.started("h", 0)
    s.stopped("h")
    assert s.phase("h") is None and s.due(10**9) == []
    s.started("h", 5)  # started again by hand: supervised again
    assert s.phase("h") is Phase.RUNNING


def test_events_out_of_order_are_refused() -> None:
    s = Supervision()
    with pytest.raises(AssertionError, match="exited while not supervised"):
        s.exited("h", 0)
    s.started("h", 0)
    with pytest.raises(AssertionError, match="start_failed while RUNNING"):
        s.start_failed("h", 0)


def test_exit_codes_are_described_for_people() -> None:
    assert describe_exit(-9) == "killed by SIGKILL" and describe_exit(3) == "exited with 3"


class FakeHosts:
    """Hosts whose exit codes a test sets; restarts fail while `failing`."""

    def __init__(self) -> None:
        self.codes: dict[str, int | None] = {"h": None}
        self.failing = False
        self.restarts: list[str] = []
        self.counted = 0
        self.now = 0
        self.passed = threading.Event()

    def exit_codes(self) -> Mapping[str, int | None]:
        self.passed.set()
        return dict(self.codes)

    def restart(self, name: str) -> int:
        self.restarts.append(name)
        if self.failing:
            raise RuntimeError("host h did not start within 60 s:\nits log")
        self.codes[name] = None
        return 4242

    def count(self) -> None:
        self.counted += 1


def run_pass(supervisor: HostSupervisor, hosts: FakeHosts) -> None:
    """Wait for the supervisor's next pass to end (it polls every millisecond)."""
    for _ in range(2):
        hosts.passed.clear()
        assert hosts.passed.wait(5)


def test_the_supervisor_restarts_a_dead_host_logs_once_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streams_rt.runtime.host_supervisor")
    hosts = FakeHosts()
    supervisor = HostSupervisor(hosts.exit_codes, hosts.restart, hosts.count,
                                Supervision(backoff_ms=1_000, max_backoff_ms=4_000), clock=lambda: hosts.now,
                                poll_s=0.001)
    supervisor.started("h")
    supervisor.start()
    try:
        hosts.codes["h"] = -9
        run_pass(supervisor, hosts)
        assert hosts.restarts == []  # its back-off has not passed
        hosts.now = 1_000
        run_pass(supervisor, hosts)
        assert hosts.restarts == ["h"] and hosts.counted == 1
        hosts.failing, hosts.codes["h"], hosts.now = True, -9, 2_000
        run_pass(supervisor, hosts)
        hosts.now = 4_000  # 2 s back-off (second death in a row)
        run_pass(supervisor, hosts)
        assert hosts.restarts == ["h", "h"] and hosts.counted == 1  # that restart failed: not counted
        hosts.failing, hosts.now = False, 8_000  # 4 s after the failed one
        run_pass(supervisor, hosts)
        assert hosts.restarts == ["h", "h", "h"] and hosts.counted == 2
    finally:
        supervisor.close()
    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("task host h killed by SIGKILL; restarting it in its state directory in 1.0 s "
                          "(restart 1 in a row)") == 1
    assert "task host h did not come back (host h did not start within 60 s:); trying again in 4.0 s" in messages
    assert messages.count("task host h restarted (pid 4242)") == 2


def test_a_host_stopped_while_dead_is_not_restarted() -> None:
    hosts = FakeHosts()
    supervisor = HostSupervisor(hosts.exit_codes, hosts.restart, hosts.count, clock=lambda: hosts.now, poll_s=0.001)
    supervisor.started("h")
    supervisor.stopped("h")
    supervisor.start()
    try:
        hosts.codes["h"], hosts.now = 0, 10**9
        run_pass(supervisor, hosts)
    finally:
        supervisor.close()
    assert hosts.restarts == []
