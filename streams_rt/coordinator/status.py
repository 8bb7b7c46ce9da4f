"""The operator's view of one application, as one JSON object: the group, its hosts, every task
with the state its owner reported and the lags its replicas reported, and the last rebalances.
`streams-rt status`, the status page and the Prometheus metrics all read this one object, so they
never disagree. Pure: the coordinator builds it under the group lock."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from streams_rt.assignment import ClientAssignment
from streams_rt.coordinator.group import Group
from streams_rt.coordinator.history import RebalanceEvent, short_member_id
from streams_rt.protocol import TaskId
from streams_rt.rpc.tasks import TaskStatus


def build_status(
    *,
    group: Group,
    tasks: Mapping[TaskId, TaskStatus],
    endpoints: Mapping[str, str],
    pids: Mapping[str, int],
    lags: Mapping[str, Mapping[TaskId, int]],
    rebalances: Sequence[RebalanceEvent],
    metrics: Mapping[str, float],
    coordinator: str,
    http: str | None,
    now_ms: int,
    draining: Collection[str] = (),
) -> dict[str, Any]:
    """`tasks` is every task's status (TaskReports.status), `endpoints` each member's batch endpoint
    and `pids` its host's process id as it reported them, `lags` each member's reported lag per
    stateful task (as of the last round), `rebalances` oldest first, `coordinator` and `http` its
    addresses (None: no HTTP endpoint), `now_ms` epoch milliseconds, `draining` the members being
    drained (`streams-rt drain`)."""
    hosts = []
    standbys: dict[TaskId, list[str]] = {}
    warmups: dict[TaskId, list[str]] = {}
    for member_id, member in sorted(group.members.items()):
        a = member.assignment.tasks if member.assignment is not None else ClientAssignment()
        for task in a.standby:
            (warmups if task in a.warmup else standbys).setdefault(task, []).append(member_id)
        hosts.append({
            "member": member_id,
            "name": short_member_id(member_id),
            "instance_id": member.instance_id,
            "endpoint": endpoints.get(member_id),
            "pid": pids.get(member_id),
            # its interactive-query endpoint (host:port), as its subscription carries it (application.server)
            "query_endpoint": getattr(getattr(member.subscription, "info", None), "user_endpoint", None),
            "capacity": member.capacity,
            # the metadata version of its subscription and the newest it reads (a rolling upgrade's progress)
            "version": getattr(member.subscription, "version", None),
            "latest_supported_version": getattr(member.subscription, "latest_supported_version", None),
            "rebalance_protocol": member.protocol.name,
            "generation": member.assignment.generation if member.assignment is not None else -1,
            "active": [str(t) for t in sorted(a.active)],
            "standby": [str(t) for t in sorted(a.standby - a.warmup)],
            "warmup": [str(t) for t in sorted(a.warmup)],
            "revoke": [str(t) for t in sorted(a.revoke)],
            "draining": member_id in draining,
        })
    task_rows = []
    for task, status in sorted(tasks.items()):
        replicas = [status.owner] if status.owner is not None else []
        replicas += standbys.get(task, []) + warmups.get(task, [])
        task_lags = {m: lags[m][task] for m in replicas if task in lags.get(m, {})}
        task_rows.append({
            "task": str(task),
            "state": status.phase,
            "active": status.owner,
            "standby": standbys.get(task, []),
            "warmup": warmups.get(task, []),
            "lags": task_lags,
        })
    return {
        "application_id": group.group_id,
        "coordinator": coordinator,
        "http": http,
        "state": group.state.value,
        "generation": group.generation,
        "protocol": group.protocol.name if group.protocol is not None else "",
        "now_ms": now_ms,
        "hosts": hosts,
        "tasks": task_rows,
        "rebalances": [event.to_json() for event in rebalances],
        "metrics": dict(metrics),
    }
