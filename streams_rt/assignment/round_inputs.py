"""One round's inputs, numbered: the assignor works on task and client numbers (list indexes), which
keeps its inner loops on ints. Tasks are numbered in Kafka's TaskId order and clients in process-id
order, so the input order never matters."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from streams_rt.protocol import TaskId

from .lag import Lags
from .model import AssignmentConfigs, ClientState
from .ownership import resolve_owners

_SUBTOPOLOGY = operator.itemgetter(0)
_SUBTOPOLOGY_PARTITION = operator.itemgetter(0, 1)
_TOPOLOGY_NAME = operator.itemgetter(2)


def sorted_unique(tasks: Collection[TaskId]) -> list[TaskId]:
    """Tasks in Kafka's TaskId order (unnamed first, then topology name, subtopology, partition),
    duplicates dropped. Where no task is named, keys and comparisons stay in C (TaskId's own ordering
    is Python), and input that is already in order (the usual case) is only checked."""
    listed = list(tasks)
    if set(map(_TOPOLOGY_NAME, listed)) <= {None}:
        # tuple.__lt__ compares the fields in C, bypassing TaskId's own __lt__.
        if all(map(tuple.__lt__, listed, itertools.islice(listed, 1, None))):
            return listed
        return sorted(set(listed), key=_SUBTOPOLOGY_PARTITION)
    return sorted(set(listed), key=TaskId._sort_key)


FillKey = Callable[[int], tuple[int, bool, str, int]]


def _partition_major(task: TaskId) -> tuple[int, bool, str, int]:
    """Fill order: t0_p0, t1_p0, t0_p1, ... so the tasks of one partition spread over clients."""
    return (task.partition, task.topology_name is not None, task.topology_name or "", task.subtopology)


def _fill_order(ordered: Sequence[TaskId]) -> FillKey | None:
    """Sort key for task numbers giving the partition-major fill order, computed only for the tasks
    that are sorted (usually the few left unassigned). With one subtopology that is TaskId order itself
    (None: sort by number; ordered is sorted, so equal ends mean all equal)."""
    first, last = ordered[0], ordered[-1]
    if (first.topology_name, first.subtopology) == (last.topology_name, last.subtopology):
        return None
    return lambda t: _partition_major(ordered[t])


def _subtopology_ids(ordered: Sequence[TaskId]) -> list[int]:
    """Per task, an id of its subtopology (with its topology name), ascending in task order."""
    if ordered[-1].topology_name is None:  # none is named (named ones sort last)
        return list(map(_SUBTOPOLOGY, ordered))
    ids: dict[tuple[str | None, int], int] = {}
    return [ids.setdefault((t.topology_name, t.subtopology), len(ids)) for t in ordered]


@dataclass(frozen=True, slots=True)
class RoundInputs:
    """tasks[t]: task number t's TaskId; subtopology[t]: an id of its subtopology, ascending with t;
    end[t]: its changelog end-offset sum (None: stateless); clients[c]: client number c; owner[t]: its
    valid owner (KIP-341) or NO_OWNER; ignored[c]: client c's ignored claims; fill_key: the order
    unassigned tasks are dealt in (None: task number); rank[c]: client c's place when clients tie
    for a leftover task (see leftover_rank)."""

    tasks: list[TaskId]
    subtopology: list[int]
    number: dict[TaskId, int]
    end: list[int | None]
    clients: list[ClientState]
    capacities: list[int]
    owner: list[int]
    ignored: list[list[TaskId]]
    lags: Lags
    configs: AssignmentConfigs
    fill_key: FillKey | None
    rank: list[int]

    @property
    def n_clients(self) -> int:
        return len(self.clients)


def leftover_rank(clients: Sequence[ClientState], capacities: Sequence[int], tag_keys: Sequence[str]) -> list[int]:
    """Where quotas leave a task over for one of several clients, who gets it first. With
    rack.aware.assignment.tags, clients in zones holding less of the capacity: a standby may not share
    its active's zone, so an active in a small zone sends its standby to the big zones, while one in a
    big zone loads the few clients of the small ones. Then by process id."""
    if not tag_keys:
        return list(range(len(clients)))
    held: dict[tuple[str, str | None], int] = {}
    for s, cap in zip(clients, capacities, strict=True):
        for k in tag_keys:
            held[k, s.tags.get(k)] = held.get((k, s.tags.get(k)), 0) + cap
    order = sorted(range(len(clients)), key=lambda c: (tuple(held[k, clients[c].tags.get(k)] for k in tag_keys), c))
    rank = [0] * len(clients)
    for place, c in enumerate(order):
        rank[c] = place
    return rank


def number_round(
    ordered: list[TaskId],
    states: list[ClientState],
    changelog_end_offsets: Mapping[TaskId, int],
    stateless: Collection[TaskId],
    configs: AssignmentConfigs,
) -> RoundInputs:
    """`ordered`: the tasks as sorted_unique returns them (not empty); `states`: the clients sorted by
    process id (not empty)."""
    number = {task: i for i, task in enumerate(ordered)}
    end: list[int | None] = [None] * len(ordered)
    for task, end_offset in changelog_end_offsets.items():
        t = number.get(task)
        if t is not None:
            end[t] = end_offset
    for task in stateless:
        t = number.get(task)
        if t is not None:
            end[t] = None
    owner, ignored = resolve_owners([s.owned_active for s in states], number)
    lags = Lags(
        tasks=ordered,
        end_offsets=end,
        offset_sums=[s.task_offset_sums for s in states],
        owned_standby=[s.owned_standby for s in states],
        task_number=number,
        owner=owner,
        ignored_claims=ignored,
        acceptable_recovery_lag=configs.acceptable_recovery_lag,
    )
    capacities = [s.capacity for s in states]
    return RoundInputs(
        ordered, _subtopology_ids(ordered), number, end, states, capacities, owner, ignored, lags, configs,
        _fill_order(ordered), leftover_rank(states, capacities, configs.rack_aware_assignment_tags),
    )
