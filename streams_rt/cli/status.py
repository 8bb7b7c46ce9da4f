"""`streams-rt status`: the group, its hosts, every task with its state and lags, the generation and
the last rebalances, as the coordinator sees them now (its `status` action)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from streams_rt.cli.coordinator_access import Access, access, call_coordinator, coordinator_options
from streams_rt.rpc.batches import BatchError
from streams_rt.rpc.messages import StatusRequest, StatusResponse

REBALANCES_SHOWN = 5
MOVES_SHOWN = 12


@click.command("status")
@coordinator_options
@click.option("--json", "as_json", is_flag=True, help="Print the coordinator's status object as JSON.")
def status(application_id: str, state_dir: Path | None, address: str | None, truststore: Path | None,
           as_json: bool) -> None:
    """Show the group, its hosts, the tasks with state and lag, the generation and the last rebalances.

    The coordinator is found through the file its driver wrote on this machine
    (<state.dir>/<application.id>.coordinator.json, which holds the run's secret), or at --coordinator
    with the secret in $STREAMS_RT_AUTH_SECRET."""
    reach = access(application_id, state_dir, address, truststore)
    response = call_coordinator(reach, StatusRequest(group_id=application_id), StatusResponse)
    hosts = [{**h, "pid": h.get("pid") or _pid(reach, h["endpoint"])} for h in response.status["hosts"]]
    status = {**response.status, "hosts": hosts}
    click.echo(json.dumps(status, indent=2) if as_json else render_status(status))


def _pid(reach: Access, endpoint: str | None) -> int | None:
    """The host's process id, as the host itself answers, for a coordinator whose status lacks it (None: no
    endpoint, or no answer in 5 s)."""
    if not endpoint:
        return None
    try:
        with reach.host(endpoint, timeout_s=5.0) as client:
            return int(client.status()["pid"])
    except (BatchError, KeyError, ValueError):
        return None


def render_status(status: Mapping[str, Any]) -> str:
    """The status object (coordinator/status.py) as text tables."""
    names = {h["member"]: h["name"] for h in status["hosts"]}
    tasks = status["tasks"]
    states: dict[str, int] = {}
    for task in tasks:
        states[task["state"]] = states.get(task["state"], 0) + 1
    lines = [
        f"application {status['application_id']}  coordinator {status['coordinator']}  "
        f"status page {status['http'] or 'off'}",
        f"group {status['state']}  generation {status['generation']}  protocol {status['protocol'] or '-'}  "
        f"hosts {len(status['hosts'])}  tasks {len(tasks)} "
        f"({', '.join(f'{n} {s}' for s, n in sorted(states.items())) or 'none'})",
        "",
    ]
    lines += _table(["HOST", "PID", "ENDPOINT", "QUERIES", "VERSION", "ACTIVE", "STANDBY", "WARMUP"], [
        [h["name"] + (" (draining)" if h.get("draining") else ""), str(h.get("pid") or "-"), h["endpoint"] or "-",
         f"http://{h['query_endpoint']}" if h.get("query_endpoint") else "-", _version(h),
         _tasks(h["active"]), _tasks(h["standby"]), _tasks(h["warmup"])]
        for h in status["hosts"]
    ])
    lines.append("")

    def name(member: str | None) -> str:
        return "-" if member is None else names.get(member, member)

    def replicas(members: Sequence[str], lags: Mapping[str, int]) -> str:
        return ", ".join(f"{name(m)}{_lag(lags.get(m))}" for m in members) or "-"

    lines += _table(["TASK", "STATE", "ACTIVE", "STANDBY", "WARMUP"], [
        [t["task"], t["state"], replicas([t["active"]] if t["active"] else [], t["lags"]),
         replicas(t["standby"], t["lags"]), replicas(t["warmup"], t["lags"])]
        for t in tasks
    ])
    lines += ["", "(n): records the replica's state was behind its changelogs when the generation formed",
              "", "LAST REBALANCES (newest first)"]
    events = list(reversed(status["rebalances"]))[:REBALANCES_SHOWN]
    if not events:
        lines.append("none yet")
    for event in events:
        when = datetime.datetime.fromtimestamp(event["formed_ms"] / 1000).strftime("%H:%M:%S")
        lines.append(f"generation {event['generation']}  {when}  {event['duration_ms']} ms  "
                     f"{event['protocol'] or 'failed'}  {event['members']} hosts  {event['reason']}")
        moves = [f"{m['task']} {m['kind']} {m['from'] or 'none'}->{m['to'] or 'none'}" for m in event["moves"]]
        more = f" and {len(moves) - MOVES_SHOWN} more" if len(moves) > MOVES_SHOWN else ""
        lines.append(f"  moved: {', '.join(moves[:MOVES_SHOWN])}{more}" if moves else "  nothing moved")
    return "\n".join(lines)


def _version(host: Mapping[str, Any]) -> str:
    """Its subscription's metadata version / the newest it reads, and the protocol it asked for."""
    used, latest = host.get("version"), host.get("latest_supported_version")
    if used is None:
        return "-"
    readable = latest if latest is not None and latest >= 0 else "-"
    return f"{used}/{readable} {host.get('rebalance_protocol', '')}".strip()


def _tasks(tasks: Sequence[str]) -> str:
    return " ".join(tasks) or "-"


def _lag(lag: int | None) -> str:
    return "" if lag is None else " (?)" if lag < 0 else f" ({lag})"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in [header, *rows]]
