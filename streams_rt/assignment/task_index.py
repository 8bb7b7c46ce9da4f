"""Task numbers: the assignor works on ints, and maps each TaskId it receives to one once."""

from __future__ import annotations

from collections.abc import Sequence

from streams_rt.protocol import TaskId


class TaskIndex:
    """Hot loops may read `by_key` directly, saving a call per lookup (TaskId hashes in C)."""

    __slots__ = ("by_key",)

    def __init__(self, tasks: Sequence[TaskId]) -> None:
        self.by_key = {t: i for i, t in enumerate(tasks)}

    def __len__(self) -> int:
        return len(self.by_key)

    def get(self, task: TaskId) -> int | None:
        return self.by_key.get(task)
