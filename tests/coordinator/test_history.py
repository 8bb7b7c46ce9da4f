"""What moved between two generations, as the history records it: pure, no services."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streams_rt.assignment import ClientAssignment
from streams_rt.coordinator.history import RebalanceHistory, TaskMove, short_member_id, task_moves
from streams_rt.protocol import TaskId

A, B = "member-11111111-2222-3333-4444-555555555555", "member-66666666-7777-8888-9999-000000000000"
T0, T1 = TaskId(0, 0), TaskId(0, 1)


def test_an_active_task_that_changed_owner_is_one_move_and_replicas_are_placed_or_dropped() -> None:
    before = {A: ClientAssignment(active=frozenset({T0, T1})), B: ClientAssignment()}
    after = {A: ClientAssignment(active=frozenset({T0}), standby=frozenset({T1})),
             B: ClientAssignment(active=frozenset({T1}), standby=frozenset({T0}), warmup=frozenset({T0}))}
    assert task_moves(before, after) == [
        TaskMove(T0, "warmup", None, B),
        TaskMove(T1, "active", A, B),
        TaskMove(T1, "standby", None, A),
    ]
    assert task_moves(after, after) == []


def test_a_departed_members_tasks_move_from_it() -> None:
    assert task_moves({A: ClientAssignment(active=frozenset({T0}), standby=frozenset({T1}))}, {}) == [
        TaskMove(T0, "active", A, None), TaskMove(T1, "standby", A, None)]


def test_members_are_named_by_their_short_ids() -> None:
    assert short_member_id(A) == "member-11111111"
    assert short_member_id("host-1-" + A[7:]) == "host-1-11111111"
    assert short_member_id("odd") == "odd"
    assert str(TaskMove(T0, "active", A, None)) == "0_0 active member-11111111->none"


def test_the_history_diffs_each_generation_against_the_previous_and_keeps_the_last() -> None:
    history = RebalanceHistory(capacity=2)
    one = {A: ClientAssignment(active=frozenset({T0}))}
    first = history.generation_formed(generation=1, protocol="COOPERATIVE", reason="new member joined",
                                      started_ms=1_000, formed_ms=1_250, assignments=one)
    assert first.moves == (TaskMove(T0, "active", None, A),)
    assert first.to_json()["duration_ms"] == 250 and first.to_json()["moves"][0]["to"] == "member-11111111"
    history.generation_formed(generation=2, protocol="COOPERATIVE", reason="r", started_ms=2_000, formed_ms=2_000,
                              assignments=one)
    third = history.generation_formed(generation=3, protocol="COOPERATIVE", reason="r", started_ms=3_000,
                                      formed_ms=3_000, assignments={B: ClientAssignment(active=frozenset({T0}))})
    assert third.moves == (TaskMove(T0, "active", A, B),)
    assert [e.generation for e in history.events()] == [2, 3]


members = st.sampled_from([A, B, "member-c"])
tasks = st.builds(TaskId, st.integers(0, 2), st.integers(0, 3))
ownership = st.dictionaries(tasks, members)


@given(ownership, ownership)
def test_replaying_the_active_moves_turns_the_old_owners_into_the_new(old: dict[TaskId, str],
                                                                        new: dict[TaskId, str]) -> None:
    def assignments(owners: dict[TaskId, str]) -> dict[str, ClientAssignment]:
        out: dict[str, set[TaskId]] = {}
        for task, member in owners.items():
            out.setdefault(member, set()).add(task)
        return {member: ClientAssignment(active=frozenset(ts)) for member, ts in out.items()}

    owners: dict[TaskId, str | None] = dict(old)
    for move in task_moves(assignments(old), assignments(new)):
        assert move.kind == "active" and owners.get(move.task) == move.source
        owners[move.task] = move.target
    assert {t: m for t, m in owners.items() if m is not None} == new
