"""What hosts tell the coordinator about their active tasks, and what planners ask it (or a host): typed
forms of the `report_tasks`, `task_status` and host `progress` payloads, checked field by field (they
arrive over the network as JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.errors import GroupError, GroupErrorException

MAX_REPORTED_TASKS = 100_000
ASSIGNED = "ASSIGNED"  # a task's status while its owner has not reported for the current generation yet
UNASSIGNED = "UNASSIGNED"  # no member owns the task now (a rebalance is moving it, or no member is left)


@dataclass(frozen=True)
class TaskReport:
    """One active task on one host: its phase (CREATED, RESTORING, RUNNING, SUSPENDED) and, when
    RUNNING, its committed input positions (the next offset to process per partition)."""

    phase: str
    positions: Mapping[TopicPartition, int]

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase,
                "positions": [[tp.topic, tp.partition, o] for tp, o in sorted(self.positions.items())]}


@dataclass(frozen=True)
class TaskStatus:
    """A task as the coordinator sees it: its owner (member id and batch endpoint, or None), the
    owner's reported phase and positions, and the input partitions it reads. `caught_up`: the round
    that gave the owner the task found it caught up on the task's state (KIP-441's rule: it runs the
    task, holds a standby within `acceptable.recovery.lag`, or the task is stateless), so it takes the
    task over without a restore worth waiting out."""

    task: TaskId
    owner: str | None
    endpoint: str | None
    phase: str  # the owner's phase, or UNASSIGNED
    positions: Mapping[TopicPartition, int]
    inputs: tuple[TopicPartition, ...]
    caught_up: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "owner": self.owner, "endpoint": self.endpoint, "phase": self.phase,
            "positions": [[tp.topic, tp.partition, o] for tp, o in sorted(self.positions.items())],
            "inputs": [[tp.topic, tp.partition] for tp in self.inputs],
            "caught_up": self.caught_up,
        }

    @classmethod
    def from_json(cls, task: str, raw: Any) -> TaskStatus:
        if not isinstance(raw, dict):
            raise _invalid(f"status of {task!r} must be an object")
        return cls(
            task=_task(task),
            owner=_optional_str(raw.get("owner"), "owner"),
            endpoint=_optional_str(raw.get("endpoint"), "endpoint"),
            phase=_str(raw.get("phase"), "phase"),
            positions=_positions(raw.get("positions", [])),
            inputs=tuple(TopicPartition(_str(t, "topic"), _int(p, "partition"))
                         for t, p in _pairs(raw.get("inputs", []))),
            caught_up=_bool(raw.get("caught_up", False), "caught_up"),  # absent from older coordinators
        )


@dataclass(frozen=True)
class TaskProgress:
    """What a task's owner says of it, asked directly (a report to the coordinator may be a moment
    old): its committed positions and the batch it applied last (None: unnumbered, or none yet)."""

    positions: Mapping[TopicPartition, int]
    last_batch: int | None

    def to_json(self) -> dict[str, Any]:
        return {"positions": [[tp.topic, tp.partition, o] for tp, o in sorted(self.positions.items())],
                "last_batch": self.last_batch}


def parse_progress(raw: Any) -> dict[TaskId, TaskProgress]:
    """A host's `progress` answer: {task id: {"positions": [[topic, partition, offset]], "last_batch": N}}."""
    if not isinstance(raw, dict) or len(raw) > MAX_REPORTED_TASKS:
        raise _invalid(f"progress must be an object of at most {MAX_REPORTED_TASKS} tasks")
    out = {}
    for task, entry in raw.items():
        if not isinstance(entry, dict) or set(entry) != {"positions", "last_batch"}:
            raise _invalid(f"task {str(task)[:40]!r}: expected an object with positions and last_batch")
        last = entry["last_batch"]
        out[_task(task)] = TaskProgress(_positions(entry["positions"]),
                                        None if last is None else _int(last, "last_batch"))
    return out


def parse_reports(raw: Any) -> dict[TaskId, TaskReport]:
    """The `tasks` field of a report: {task id: {"phase": ..., "positions": [[topic, partition, offset]]}}."""
    if not isinstance(raw, dict):
        raise _invalid("tasks must be an object")
    if len(raw) > MAX_REPORTED_TASKS:
        raise _invalid(f"at most {MAX_REPORTED_TASKS} tasks per report")
    reports = {}
    for task, entry in raw.items():
        if not isinstance(entry, dict) or set(entry) - {"phase", "positions"}:
            raise _invalid(f"task {str(task)[:40]!r}: expected an object with phase and positions")
        reports[_task(task)] = TaskReport(_str(entry.get("phase"), "phase"), _positions(entry.get("positions", [])))
    return reports


def parse_statuses(raw: Any) -> dict[TaskId, TaskStatus]:
    if not isinstance(raw, dict):
        raise _invalid("tasks must be an object")
    return {status.task: status for status in (TaskStatus.from_json(t, s) for t, s in raw.items())}


def _invalid(why: str) -> GroupErrorException:
    return GroupErrorException(GroupError.INVALID_REQUEST, why)


def _task(text: Any) -> TaskId:
    if not isinstance(text, str):
        raise _invalid("task ids must be strings")
    try:
        return TaskId.parse(text)
    except ValueError:
        raise _invalid(f"not a task id: {text[:40]!r}") from None


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str) or len(value) > 1000:
        raise _invalid(f"{what} must be a string of at most 1000 characters")
    return value


def _optional_str(value: Any, what: str) -> str | None:
    return None if value is None else _str(value, what)


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value < 2**63:
        raise _invalid(f"{what} must be an integer offset")
    return value


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise _invalid(f"{what} must be true or false")
    return value


def _pairs(raw: Any) -> list[list[Any]]:
    if not isinstance(raw, list) or not all(isinstance(x, list) and len(x) == 2 for x in raw):
        raise _invalid("expected a list of [topic, partition]")
    return raw


def _positions(raw: Any) -> dict[TopicPartition, int]:
    if not isinstance(raw, list) or not all(isinstance(x, list) and len(x) == 3 for x in raw):
        raise _invalid("positions must be a list of [topic, partition, offset]")
    return {TopicPartition(_str(t, "topic"), _int(p, "partition")): _int(o, "offset") for t, p, o in raw}
