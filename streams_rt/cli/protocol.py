"""`streams-rt protocol EAGER|COOPERATIVE|default`: KIP-125's dynamic toggle. The group runs the
chosen rebalance protocol from the next round, without a bounce; `default` hands the choice back
to `upgrade.from` and the members."""

from __future__ import annotations

from pathlib import Path

import click

from streams_rt.cli.coordinator_access import access, call_coordinator, coordinator_options
from streams_rt.rpc.messages import SetProtocolRequest, SetProtocolResponse


@click.command("protocol")
@coordinator_options
@click.argument("protocol", type=click.Choice(["EAGER", "COOPERATIVE", "default"], case_sensitive=False))
def protocol(application_id: str, state_dir: Path | None, address: str | None, truststore: Path | None,
             protocol: str) -> None:
    """Switch the group's rebalance protocol at runtime (a rebalance follows at once)."""
    chosen = "" if protocol.lower() == "default" else protocol.upper()
    reach = access(application_id, state_dir, address, truststore)
    call_coordinator(reach, SetProtocolRequest(group_id=application_id, protocol=chosen), SetProtocolResponse)
    click.echo(f"group {application_id}: rebalance protocol "
               f"{chosen or 'as upgrade.from and the members say'} from the next round")
