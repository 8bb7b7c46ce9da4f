"""The driver of the checked rolling upgrade (`streams-rt upgrade`): it reads the group's status
and each host's process id, feeds them to the pure `UpgradePlan`, and performs what it says
(restart a host, wait, report the end or the failed check)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from streams_rt.runtime.upgrade_plan import Finished, GroupSeen, HostSeen, Restart, Stopped, UpgradePlan, Wait


def group_seen(status: Mapping[str, Any], process_id_of: Callable[[str], str]) -> GroupSeen:
    """The plan's input from the coordinator's status object; `process_id_of(endpoint)` asks a host.
    A host that has not reported its endpoint yet makes the group count as not stable."""
    hosts = []
    for host in status["hosts"]:
        if not host.get("endpoint"):
            return GroupSeen(stable=False, all_running=False, hosts=())
        hosts.append(HostSeen(process_id_of(host["endpoint"]), host["name"], host["endpoint"], host.get("version"),
                              host.get("latest_supported_version"), host.get("rebalance_protocol", ""),
                              len(host.get("warmup", []))))
    lags = {t["task"]: max(t["lags"].values()) for t in status["tasks"] if t.get("lags")}
    return GroupSeen(status["state"] == "STABLE", all(t["state"] == "RUNNING" for t in status["tasks"]),
                     tuple(hosts), {task: lag for task, lag in lags.items() if lag >= 0})


def run_upgrade(plan: UpgradePlan, status: Callable[[], Mapping[str, Any]], process_id_of: Callable[[str], str],
                restart: Callable[[Restart], None], echo: Callable[[str], None],
                clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                poll_s: float = 0.5) -> Finished | Stopped:
    """Until the plan finishes or stops; echoes each restart and each new reason to wait."""
    ids: dict[str, str] = {}

    def cached(endpoint: str) -> str:
        if endpoint not in ids:
            ids[endpoint] = process_id_of(endpoint)
        return ids[endpoint]

    last_wait = ""
    while True:
        action = plan.next(group_seen(status(), cached), clock())
        if isinstance(action, (Finished, Stopped)):
            return action
        if isinstance(action, Restart):
            echo(action.describe())
            restart(action)
            last_wait = ""
        elif isinstance(action, Wait):
            if action.reason != last_wait:
                echo(f"waiting: {action.reason}")
                last_wait = action.reason
            sleep(poll_s)
