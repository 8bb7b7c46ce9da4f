"""`streams-rt drain HOST`: take one task host out of a running application with no downtime. The
host asks the coordinator to drain it: warm-ups of its active tasks are placed on the other hosts,
each active moves once its warm-up is caught up (within acceptable.recovery.lag), and the host
stops once it holds nothing. The command prints every generation's moves until the host is gone."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from streams_rt.cli.coordinator_access import access, coordinator_options
from streams_rt.cli.host import find_host, group_status
from streams_rt.rpc.batches import BatchError


@click.command("drain")
@coordinator_options
@click.argument("host_name", metavar="HOST")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True,
              help="Seconds to wait for the host to hand over its tasks and leave.")
def drain(application_id: str, state_dir: Path | None, address: str | None, truststore: Path | None,
          host_name: str, timeout_s: float) -> None:
    """Drain HOST (its name in `streams-rt status`, its member id, instance id or endpoint): move its
    tasks to the other hosts as they catch up, then stop it; wait until it has left the group."""
    reach = access(application_id, state_dir, address, truststore)
    before = group_status(reach, application_id)
    target = find_host(before["hosts"], host_name)
    if len(before["hosts"]) < 2:
        raise click.ClickException(f"host {target['name']} is the only host: its tasks have nowhere to go")
    try:
        with reach.host(str(target["endpoint"])) as client:
            client.drain("streams-rt drain")
    except BatchError as e:
        raise click.ClickException(f"host {target['name']} refused: {e}") from None
    click.echo(f"draining host {target['name']} at generation {before['generation']}: "
               f"{len(target['active'])} active, {len(target['standby'])} standby tasks to move")
    shown = before["generation"]
    deadline = time.monotonic() + timeout_s
    while True:
        time.sleep(0.5)
        now = group_status(reach, application_id)
        shown = _print_generations(now, shown)
        if now["state"] == "STABLE" and target["member"] not in {h["member"] for h in now["hosts"]}:
            click.echo(f"host {target['name']} drained and gone; group stable at generation {now['generation']} "
                       f"with {len(now['hosts'])} hosts")
            return
        if time.monotonic() > deadline:
            here = next((h for h in now["hosts"] if h["member"] == target["member"]), None)
            left = "" if here is None else f" (it still runs {', '.join(here['active']) or 'nothing'})"
            raise click.ClickException(f"host {target['name']} did not finish draining within {timeout_s:.0f} s"
                                       f"{left}: see its host.log")


def _print_generations(status: dict[str, Any], shown: int) -> int:
    """Print the generations formed after `shown`; the newest generation printed."""
    for event in status["rebalances"]:
        if event["generation"] > shown:
            moves = ", ".join(f"{m['task']} {m['kind']} {m['from'] or 'none'}->{m['to'] or 'none'}"
                              for m in event["moves"]) or "nothing moved"
            click.echo(f"generation {event['generation']} ({event['reason']}): {moves}")
            shown = event["generation"]
    return shown
