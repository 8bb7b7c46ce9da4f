"""Task numbers: the assignor works on ints, and maps each TaskId it receives to one once.

Looked up by the id's fields rather than by the TaskId itself: TaskId's dataclass __hash__ and __eq__
run as Python code and dominated the assignor's profile, while a tuple of ints hashes and compares in C.
Subscriptions are decoded separately, so their TaskIds are never the same objects as ours."""

from __future__ import annotations

from collections.abc import Sequence

from streams_rt.protocol import TaskId


class TaskIndex:
    """Hot loops may read `by_key` directly with `task_key(task)` inlined, saving a call per lookup."""

    __slots__ = ("by_key",)

    def __init__(self, tasks: Sequence[TaskId]) -> None:
        self.by_key = {(t.subtopology, t.partition, t.topology_name): i for i, t in enumerate(tasks)}

    def __len__(self) -> int:
        return len(self.by_key)

    def get(self, task: TaskId) -> int | None:
        return self.by_key.get((task.subtopology, task.partition, task.topology_name))
