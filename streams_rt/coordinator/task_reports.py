"""What the hosts report about their active tasks, held for planners: a report counts only while
its member is in the group at the generation it reported for, and only for tasks that member owns
in that generation. Pure: the caller holds the group lock.

With each round it also keeps which of their new tasks the members were caught up on (the round's
own reading of their lags): readers wait for such a takeover rather than sit a batch out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streams_rt.coordinator.group import Group
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.tasks import ASSIGNED, UNASSIGNED, TaskReport, TaskStatus


@dataclass(frozen=True)
class _HostReport:
    generation: int
    endpoint: str
    tasks: Mapping[TaskId, TaskReport]
    pid: int | None


class TaskReports:
    def __init__(self, inputs: Mapping[TaskId, Sequence[TopicPartition]]) -> None:
        self._inputs = {task: tuple(tps) for task, tps in inputs.items()}
        self._reports: dict[str, _HostReport] = {}
        self._caught_up: Mapping[str, frozenset[TaskId]] = {}

    def round_applied(self, caught_up: Mapping[str, frozenset[TaskId]]) -> None:
        """A round was applied: `caught_up` holds, per member, the active tasks it was given while caught
        up on them (a round that did not read the lags, as a probing one, passes what it kept)."""
        self._caught_up = dict(caught_up)

    def record(self, member_id: str, generation: int, endpoint: str, tasks: Mapping[TaskId, TaskReport],
               pid: int | None = None) -> None:
        self._reports[member_id] = _HostReport(generation, endpoint, dict(tasks), pid)

    def members_at(self, endpoint: str, group: Group) -> list[str]:
        """The members of `group` whose latest report names `endpoint` as their batch endpoint."""
        return [mid for mid, report in self._reports.items() if report.endpoint == endpoint and mid in group.members]

    def endpoints(self, group: Group) -> dict[str, str]:
        """Each member's batch endpoint, as its latest report named it (members that never reported
        are left out)."""
        return {mid: report.endpoint for mid, report in self._reports.items() if mid in group.members}

    def pids(self, group: Group) -> dict[str, int]:
        """Each member's host process id, as its latest report told it (members that never did are left out)."""
        return {mid: r.pid for mid, r in self._reports.items() if r.pid is not None and mid in group.members}

    def status(self, group: Group) -> dict[TaskId, TaskStatus]:
        """Every task of the topology with its current owner and, if that owner reported for its
        current generation, the owner's phase and positions."""
        owners: dict[TaskId, str] = {}
        for member_id, member in group.members.items():
            if member.assignment is not None:
                for task in member.assignment.tasks.active:
                    owners[task] = member_id
        for member_id in list(self._reports):
            if member_id not in group.members:
                del self._reports[member_id]  # the member left: its report means nothing now
        out = {}
        for task, inputs in self._inputs.items():
            owner = owners.get(task)
            report = self._reports.get(owner) if owner is not None else None
            holder = group.members.get(owner) if owner is not None else None
            current = (report is not None and holder is not None and holder.assignment is not None
                       and report.generation == holder.assignment.generation)
            entry = report.tasks.get(task) if current and report is not None else None
            out[task] = TaskStatus(
                task=task,
                owner=owner,
                endpoint=report.endpoint if current and report is not None else None,
                phase=entry.phase if entry is not None else (UNASSIGNED if owner is None else ASSIGNED),
                positions=entry.positions if entry is not None else {},
                inputs=inputs,
                caught_up=owner is not None and task in self._caught_up.get(owner, frozenset()),
            )
        return out
