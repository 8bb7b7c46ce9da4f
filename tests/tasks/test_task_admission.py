"""Which batches a RUNNING task accepts (streams_rt/tasks/task.py), pure: a batch at the committed
positions runs; one that starts further on (the task sat out an earlier micro-batch while it moved)
runs from the positions, so no record is skipped; the batch applied last is replayed, never applied
twice; anything starting before the positions is refused."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.tasks.task import ActiveTask, Ranges, Refusal, TaskPhase

A, B = TopicPartition("in", 0), TopicPartition("in", 1)


def running(positions: dict[TopicPartition, int], last: Ranges | None = None, last_batch: int | None = None
            ) -> ActiveTask:
    task = ActiveTask(TaskId(0, 0), frozenset(positions))
    task.move(TaskPhase.RESTORING)
    task.restored(positions, last, last_batch)
    return task


def test_a_batch_at_the_committed_positions_runs_as_asked() -> None:
    admission = running({A: 10, B: 5}).admit({A: (10, 20), B: (5, 5)}, 3)
    assert admission.run and admission.ranges == {A: (10, 20), B: (5, 5)}


def test_a_batch_that_starts_further_on_runs_from_the_committed_positions() -> None:
    admission = running({A: 10, B: 5}).admit({A: (15, 20), B: (5, 9)}, 3)
    assert admission.run and admission.ranges == {A: (10, 20), B: (5, 9)}
    assert "starts at in-0@15, in-1@5; running it from in-0@10, in-1@5" in admission.reason


def test_an_empty_batch_further_on_runs_what_was_sat_out() -> None:
    admission = running({A: 10, B: 5}).admit({A: (15, 15), B: (5, 5)}, 3)
    assert admission.run and admission.ranges == {A: (10, 15), B: (5, 5)}


def test_an_empty_batch_at_the_committed_positions_is_nothing_to_do() -> None:
    admission = running({A: 10, B: 5}, {A: (4, 10), B: (5, 5)}, 2).admit({A: (10, 10), B: (5, 5)}, 3)
    assert not admission.run and not admission.replay and admission.refusal is None


def test_a_batch_that_starts_before_the_committed_positions_is_refused() -> None:
    admission = running({A: 10, B: 5}).admit({A: (8, 20), B: (5, 9)}, 3)
    assert admission.refusal is Refusal.OUT_OF_ORDER and "in-0@10" in admission.reason


def test_the_last_batch_asked_again_is_replayed_by_its_ranges_or_by_its_number_and_ends() -> None:
    task = running({A: 20, B: 9}, {A: (10, 20), B: (5, 9)}, 7)
    assert task.admit({A: (10, 20), B: (5, 9)}).replay  # the same ranges, numbered or not
    assert task.admit({A: (15, 20), B: (5, 9)}, 7).replay  # the request that was extended back
    assert task.admit({A: (20, 20), B: (9, 9)}, 7).replay  # an empty catch-up request, re-run
    assert not task.admit({A: (20, 20), B: (9, 9)}, 8).replay  # another batch: nothing to do
    assert task.admit({A: (15, 20), B: (5, 9)}, 8).refusal is Refusal.OUT_OF_ORDER
    assert task.admit({A: (15, 20), B: (5, 9)}).refusal is Refusal.OUT_OF_ORDER  # unnumbered: ranges only


def test_applied_records_the_ranges_and_the_batch_number() -> None:
    task = running({A: 10, B: 5})
    task.applied({A: (10, 20), B: (5, 9)}, 4)
    assert task.positions == {A: 20, B: 9} and task.last_ranges == {A: (10, 20), B: (5, 9)} and task.last_batch == 4


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.booleans(), st.booleans()), max_size=40))
def test_sitting_out_batches_never_skips_or_repeats_a_record(steps: list[tuple[int, int, bool, bool]]) -> None:
    """The planner moves its offsets on every batch; the task sits some out and a driver re-asks
    some: what the task ran is every offset up to the planner's last end, each exactly once."""
    task = running({A: 0, B: 0})
    planned = {A: 0, B: 0}
    ran: dict[TopicPartition, list[int]] = {A: [], B: []}
    for batch, (more_a, more_b, sits_out, asked_again) in enumerate(steps):
        request = {A: (planned[A], planned[A] + more_a), B: (planned[B], planned[B] + more_b)}
        planned = {tp: end for tp, (_, end) in request.items()}
        if sits_out:
            continue
        for _ in range(2 if asked_again else 1):
            admission = task.admit(request, batch)
            assert admission.refusal is None, admission.reason
            if admission.run:
                assert admission.ranges is not None
                for tp, (start, end) in admission.ranges.items():
                    ran[tp].extend(range(start, end))
                task.applied(admission.ranges, batch)
    catch_up = task.admit({tp: (end, end) for tp, end in planned.items()}, len(steps))
    assert catch_up.refusal is None
    if catch_up.run:
        assert catch_up.ranges is not None
        for tp, (start, end) in catch_up.ranges.items():
            ran[tp].extend(range(start, end))
    assert ran == {tp: list(range(end)) for tp, end in planned.items()}
