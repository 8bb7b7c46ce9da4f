"""`streams-rt host restart HOST`: bounce one task host in place with new settings or new code, the
step a rolling upgrade repeats host by host. The host checks the request before it stops (a bad
key or a missing interpreter is refused and it keeps running), closes cleanly, starts again from
the new settings, and rejoins; the command waits until the group is stable with it back and every
task runs."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from streams_rt.cli.coordinator_access import Access, access, call_coordinator, coordinator_options
from streams_rt.rpc.batches import BatchError
from streams_rt.rpc.messages import StatusRequest, StatusResponse


@click.group("host")
def host() -> None:
    """Operate on one task host of a running application."""


def _pairs(values: Sequence[str], what: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, given = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r} is not KEY=VALUE", param_hint=what)
        pairs[key] = given
    return pairs


@host.command("restart")
@coordinator_options
@click.argument("host_name", metavar="HOST")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="A property the new host runs with (e.g. upgrade.from=3.9); repeatable.")
@click.option("--unset", multiple=True, metavar="KEY",
              help="A property the new host runs without (e.g. upgrade.from, on the second bounce); repeatable.")
@click.option("--python", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Start the host from this interpreter: another environment, another streams_rt version.")
@click.option("--env", "environment", multiple=True, metavar="KEY=VALUE",
              help="An environment variable for the new host; repeatable.")
@click.option("--timeout", "timeout_s", type=float, default=180.0, show_default=True,
              help="Seconds to wait for the host to come back, the group to settle and every task to run.")
def restart(application_id: str, state_dir: Path | None, address: str | None, truststore: Path | None,
            host_name: str, settings: Sequence[str], unset: Sequence[str], python: Path | None,
            environment: Sequence[str], timeout_s: float) -> None:
    """Restart HOST (its name in `streams-rt status`, its member id, instance id or endpoint) with new
    settings or code, and wait until it is back in a stable group with every task running."""
    properties: dict[str, Any] = {**_pairs(settings, "--set"), **{key: None for key in unset}}
    request = {"properties": properties, "python": str(python.absolute()) if python else None,
               "env": _pairs(environment, "--env"), "latest_supported_version": None}
    reach = access(application_id, state_dir, address, truststore)
    before = group_status(reach, application_id)
    target = find_host(before["hosts"], host_name)
    try:
        with reach.host(str(target["endpoint"])) as client:
            client.restart(request)
    except BatchError as e:
        raise click.ClickException(f"host {target['name']} refused: {e}") from None
    click.echo(f"host {target['name']} is restarting ({_describe(properties, python)})")
    deadline = time.monotonic() + timeout_s
    settled_at: int | None = None  # the generation seen settled at the last poll
    while True:
        time.sleep(0.5)
        now = group_status(reach, application_id)
        if not _settled(now, before, target):
            settled_at = None
        elif settled_at == now["generation"]:
            click.echo(f"group stable at generation {now['generation']} with {len(now['hosts'])} hosts, "
                       f"every task running")
            return
        else:
            settled_at = now["generation"]
        if time.monotonic() > deadline:
            raise click.ClickException(f"host {target['name']} did not rejoin a stable group within {timeout_s:.0f} s "
                                       f"(group {now['state']}, {len(now['hosts'])} hosts): see its host.log")


def _settled(now: Mapping[str, Any], before: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    """The restarted host is back (a new endpoint, as many hosts as before), the group is stable and
    every task runs. Seen at two polls in a row at one generation, so that a follow-up rebalance
    (cooperative hand-offs, warm-ups placed) counts as part of the restart: the next restart then
    starts from a group at rest, as Kafka Streams' runbooks wait for RUNNING between bounces."""
    endpoints = {h["endpoint"] for h in now["hosts"]}
    back = len(now["hosts"]) >= len(before["hosts"]) and target["endpoint"] not in endpoints
    return back and now["state"] == "STABLE" and all(t["state"] == "RUNNING" for t in now["tasks"])


def _describe(properties: Mapping[str, Any], python: Path | None) -> str:
    changes = [f"{k}={v}" if v is not None else f"without {k}" for k, v in sorted(properties.items())]
    if python is not None:
        changes.append(f"from {python}")
    return ", ".join(changes) or "same settings"


def find_host(hosts: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    found = [h for h in hosts if name in (h["name"], h["member"], h.get("instance_id"), h.get("endpoint"))]
    if len(found) != 1:
        known = ", ".join(h["name"] for h in hosts) or "none"
        raise click.ClickException(f"no single host named {name!r} in the group (hosts: {known})")
    if not found[0].get("endpoint"):
        raise click.ClickException(f"host {name!r} has not reported its endpoint yet; try again in a moment")
    return found[0]


def group_status(reach: Access, application_id: str) -> dict[str, Any]:
    status: dict[str, Any] = call_coordinator(reach, StatusRequest(group_id=application_id), StatusResponse).status
    return status
