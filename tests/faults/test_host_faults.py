"""Faults of task hosts (OS processes, driven by the batch loop as the Spark source drives them):
kill -9 mid-batch three times in a row, clean stops and starts in rotation with the task counts
checked after each change (as Kafka's streams_standby_replica_test), and a host that stops
heartbeating but keeps running (SIGSTOP past the session timeout, then SIGCONT)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from streams_rt.rpc.batches import BatchError, BatchRequest, HostClient
from streams_rt.runtime.batch_loop import BatchResult
from tests.faults.conftest import Runs
from tests.faults.harness import PARTITIONS, FaultRun, SummaryRow

pytestmark = pytest.mark.broker
GUARANTEES = ["at_least_once", "exactly_once_v2"]


def busiest_host(run: FaultRun) -> str:
    """The live host with the most active tasks."""
    return max(run.app.hosts, key=lambda name: len(run.tasks_of(name)))


def kill_mid_batch(run: FaultRun, victim: str) -> BatchResult:
    """kill -9 `victim` while a round of batches runs (after the round has started and before it
    has ended); the round's result, in which the victim's batches were cut off."""
    round_result: list[BatchResult] = []
    tasks = run.tasks_of(victim)
    for _ in range(20):
        time.sleep(1.0)  # a backlog, so that the round has work to be cut off in
        worker = threading.Thread(target=lambda: round_result.append(run.loop.run_once()))
        worker.start()
        time.sleep(0.002)
        if worker.is_alive():
            run.fault(tasks)
            run.app.stop_host(victim, kill=True)
            worker.join(120)
            run.after_unclean_stop(victim)
            return round_result[-1]
        worker.join()
    raise AssertionError("no round of batches ran long enough to be interrupted")


def kill_three_times(run: FaultRun, rounds: int = 3) -> int:
    """Three kills in a row, each of the busiest host mid-batch, each host restarted (same state
    directory) once the others have taken its tasks over; how many kills cut a batch off."""
    cut = 0
    for _ in range(rounds):
        run.run_for(1.5)
        victim = busiest_host(run)
        result = kill_mid_batch(run, victim)
        cut += any(code == "UNREACHABLE" for code in result.refused.values())
        run.run_until(lambda: not run.loop.pending, 90, "the cut-off batches to run elsewhere")
        run.app.start_host(victim)
        run.settle(hosts=3)
    return cut


@pytest.mark.faults_short
def test_kill_9_mid_batch_three_times_in_a_row_short(runs: Runs, summary: list[SummaryRow]) -> None:
    # The workload must still be arriving at the third kill, or no round has a batch to cut off: on
    # a quiet machine three kills, restarts and settles take about 30 s.
    run = runs.start("exactly_once_v2", duration_s=45.0)
    run.settle(hosts=3)
    kill_three_times(run)
    verdict = run.finish("kill -9 mid-batch x3 (short)", summary)
    assert verdict.passed, verdict.problems
    assert len(run.recovery_s) >= 3


@pytest.mark.faults
@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_kill_9_mid_batch_three_times_in_a_row(runs: Runs, summary: list[SummaryRow], guarantee: str) -> None:
    from tests.faults.driver import smoke_workload

    run = runs.start(guarantee, duration_s=45.0, records=smoke_workload(20, 1000))
    run.settle(hosts=3)
    cut = kill_three_times(run)
    verdict = run.finish("kill -9 mid-batch x3", summary)
    assert verdict.passed, verdict.problems
    assert cut >= 1, "no kill landed while the victim's batch was in flight"


@pytest.mark.faults
def test_kill_9_mid_batch_three_times_with_20000_random_keys(runs: Runs, summary: list[SummaryRow]) -> None:
    """The driver's random mode: 20,000 keys, a few values each, so every batch touches many keys
    and the stores and changelogs hold many; exactly-once, the exact check."""
    from tests.faults.driver import random_workload

    run = runs.start("exactly_once_v2", duration_s=45.0, records=random_workload(20_000, 40_000))
    run.settle(hosts=3)
    kill_three_times(run)
    verdict = run.finish("kill -9 mid-batch x3, 20,000 random keys", summary)
    assert verdict.passed, verdict.problems
    assert verdict.verified == verdict.produced == 40_000


def rotate(run: FaultRun) -> list[tuple[str, dict[str, tuple[int, int]]]]:
    """Stop each host cleanly and start it again, in turn; then down to one host and back. After
    every change the counts settle: every task active once, with one standby while two or more
    hosts run (none with one)."""
    seen = []
    for name in ["host-0", "host-1", "host-2"]:
        run.fault(run.tasks_of(name))
        assert run.app.stop_host(name) == 0
        seen.append((f"stop {name}", run.settle(hosts=2)))
        run.app.start_host(name)
        seen.append((f"start {name}", run.settle(hosts=3)))
    for name in ["host-0", "host-1"]:
        assert run.app.stop_host(name) == 0
    seen.append(("host-2 alone", run.settle(hosts=1)))
    for name in ["host-0", "host-1"]:
        run.app.start_host(name)
    seen.append(("all back", run.settle(hosts=3)))
    return seen


@pytest.mark.faults
@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_clean_stop_and_start_in_rotation(runs: Runs, summary: list[SummaryRow], guarantee: str) -> None:
    run = runs.start(guarantee, duration_s=20.0)
    run.settle(hosts=3)
    for change, counts in rotate(run):
        actives = sum(a for a, _ in counts.values())
        standbys = sum(s for _, s in counts.values())
        assert actives == PARTITIONS, (change, counts)
        assert standbys == (PARTITIONS if len(counts) > 1 else 0), (change, counts)
    verdict = run.finish("clean stop/start in rotation", summary)
    assert verdict.passed, verdict.problems
    assert verdict.duplicated == 0  # clean stops commit: nothing is replayed, even at least once


@pytest.mark.faults
def test_a_host_stopped_past_its_session_timeout_is_fenced_and_rejoins(runs: Runs, summary: list[SummaryRow]) -> None:
    """SIGSTOP a host between rounds of batches; the batch loop's next calls to it hang, so they run
    in the background. Past session.timeout.ms the coordinator gives its tasks to the others. On
    SIGCONT the host answers the calls it was sent while stopped: each is refused (it no longer owns
    the task), a call for its old generation too; it rejoins as a new member, and nothing is lost
    or counted twice. (The batch loop itself sends the stopped host nothing meanwhile: its call
    would wait for the RPC timeout, as a Spark task would; see docs/operations.md, Failures.)"""
    run = runs.start("exactly_once_v2", duration_s=20.0)
    run.settle(hosts=3)
    run.run_for(2)
    victim = busiest_host(run)
    host = run.app.hosts[victim]
    generation, statuses = run.loop.status()
    endpoint = str(host.endpoint)
    owned = {t: s for t, s in statuses.items() if s.endpoint == endpoint}
    task, status = next(iter(owned.items()))
    old_member = run.host_statuses()[victim]["member_id"]
    run.fault(owned)
    os.kill(host.proc.pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    late: list[BaseException | object] = []

    def late_call() -> None:
        tp = next(iter(status.inputs))
        start = status.positions[tp]
        with HostClient(endpoint, secret=run.app.coordinator.secret, timeout_s=120) as client:
            try:
                late.append(client.run_batch(BatchRequest(task, generation, {tp: (start, start + 1)})))
            except BatchError as e:
                late.append(e)

    caller = threading.Thread(target=late_call)
    caller.start()
    try:
        # No batches meanwhile: the batch loop's call to a stopped host would wait for its RPC timeout.
        deadline = time.monotonic() + 60
        while any(s.endpoint == endpoint for s in run.loop.status()[1].values()):
            assert time.monotonic() < deadline, "the stopped host's tasks did not move within 60 s"
            time.sleep(0.2)
        assert time.monotonic() - stopped_at >= 6.0  # session.timeout.ms: not before
        run.run_for(2)  # the others run its tasks
    finally:
        os.kill(host.proc.pid, signal.SIGCONT)
    caller.join(120)
    assert len(late) == 1 and isinstance(late[0], BatchError), late
    assert late[0].code == "NOT_OWNER", late[0]
    run.settle(hosts=3)
    assert run.host_statuses()[victim]["member_id"] != old_member  # fenced: it came back as a new member
    assert host.alive
    verdict = run.finish("SIGSTOP past session timeout, SIGCONT", summary)
    assert verdict.passed, verdict.problems
