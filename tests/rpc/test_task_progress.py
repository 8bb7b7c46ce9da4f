"""A host's `progress` answer and the coordinator's task status (streams_rt/rpc/tasks.py): they
round-trip, and a malformed one is a clear error, never a crash (the Spark source reads both over
the network)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.errors import GroupErrorException
from streams_rt.rpc.tasks import TaskProgress, TaskStatus, parse_progress, parse_statuses


def test_progress_round_trips_through_json() -> None:
    progress = {TaskId(1, 2): TaskProgress({TopicPartition("in", 2): 40}, 7), TaskId(0, 0): TaskProgress({}, None)}
    raw = json.loads(json.dumps({str(t): p.to_json() for t, p in progress.items()}))
    assert parse_progress(raw) == progress


@pytest.mark.parametrize("raw", [
    [], {"0_0": []}, {"0_0": {"positions": []}}, {"0_0": {"positions": [], "last_batch": "7"}},
    {"0_0": {"positions": [["in", 0]], "last_batch": 1}}, {"x": {"positions": [], "last_batch": 1}},
    {"0_0": {"positions": [], "last_batch": 1, "more": 1}},
])
def test_a_malformed_answer_is_refused_with_a_reason(raw: Any) -> None:
    with pytest.raises(GroupErrorException) as refused:
        parse_progress(raw)
    assert str(refused.value)


def test_a_task_status_round_trips_and_reads_a_status_without_caught_up_as_not_caught_up() -> None:
    """`caught_up` is new: a coordinator of an earlier release sends statuses without it."""
    status = TaskStatus(TaskId(0, 1), "m", "grpc://h:1", "CREATED", {}, (TopicPartition("in", 1),), caught_up=True)
    raw = json.loads(json.dumps({"0_1": status.to_json()}))
    assert parse_statuses(raw) == {status.task: status}
    del raw["0_1"]["caught_up"]
    assert parse_statuses(raw)[status.task].caught_up is False
    with pytest.raises(GroupErrorException, match="caught_up"):
        parse_statuses({"0_1": {**status.to_json(), "caught_up": "yes"}})
