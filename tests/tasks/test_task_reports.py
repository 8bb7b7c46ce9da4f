"""What a host reports of its active tasks (reported_tasks): opened ones with their phase and
positions, assigned ones not opened yet as CREATED, ones being given up not at all."""

from __future__ import annotations

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.tasks import parse_reports
from streams_rt.tasks.host import reported_tasks
from streams_rt.tasks.task import TaskPhase

KEPT, PROMOTING, GIVEN_UP = TaskId(0, 0), TaskId(0, 1), TaskId(0, 2)


def test_an_assigned_task_not_opened_yet_is_reported_created_and_a_given_up_one_not_at_all() -> None:
    opened = {KEPT: (TaskPhase.RUNNING, {TopicPartition("in", 0): 42}),
              GIVEN_UP: (TaskPhase.RUNNING, {TopicPartition("in", 2): 7})}
    tasks = reported_tasks(opened, frozenset({KEPT, PROMOTING}))
    assert tasks == {"0_0": {"phase": "RUNNING", "positions": [["in", 0, 42]]},
                     "0_1": {"phase": "CREATED", "positions": []}}
    parsed = parse_reports(tasks)  # what the coordinator makes of it
    assert parsed[PROMOTING].phase == "CREATED" and parsed[KEPT].positions == {TopicPartition("in", 0): 42}


def test_with_every_task_opened_each_is_reported_as_it_is() -> None:
    opened = {KEPT: (TaskPhase.RESTORING, {}), PROMOTING: (TaskPhase.RUNNING, {TopicPartition("in", 1): 3})}
    tasks = reported_tasks(opened, frozenset(opened))
    assert {t: entry["phase"] for t, entry in tasks.items()} == {"0_0": "RESTORING", "0_1": "RUNNING"}
