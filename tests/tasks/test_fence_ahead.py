"""A failover promotes several standbys at once; under exactly-once each promotion fences the dead
owner's transactional.id, which the broker answers only once it has aborted the open transaction
(half a second or more each). fence_ahead runs those fencings at once, not one after another."""

from __future__ import annotations

import threading
from typing import Any, cast

from streams_rt.protocol import TaskId
from streams_rt.state import TaskState
from streams_rt.tasks.host import fence_ahead


class Standby:
    """What fence_ahead uses of a TaskState: its task and fence()."""

    def __init__(self, task: TaskId, fence: Any) -> None:
        self.task = task
        self._fence = fence
        self.fenced = False

    def fence(self) -> None:
        self._fence()
        self.fenced = True


def test_the_standbys_of_a_failover_are_fenced_at_once() -> None:
    # Each fencing waits for the other at a barrier: one after another, the first would break it.
    both = threading.Barrier(2, timeout=10)
    standbys = [Standby(TaskId(0, p), both.wait) for p in range(2)]
    fence_ahead(cast(list[TaskState], standbys))
    assert [s.fenced for s in standbys] == [True, True]


def test_a_fencing_that_fails_is_left_to_the_promotion_and_the_others_go_on() -> None:
    def refused() -> None:
        raise RuntimeError("broker down")

    standbys = [Standby(TaskId(0, 0), refused), Standby(TaskId(0, 1), lambda: None)]
    fence_ahead(cast(list[TaskState], standbys))
    assert [s.fenced for s in standbys] == [False, True]
