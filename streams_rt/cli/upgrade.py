"""`streams-rt upgrade --to NEW --from RELEASE`: the checked rolling upgrade. Both of KIP-429's
bounces, host by host (first on the new release with `upgrade.from`, then without it); before
each next restart the group must be stable with every task running and caught up, and every
member's reported version and protocol are verified. A failed check stops it with one line
saying which check and what to do; nothing more is restarted, and the group is left safe."""

from __future__ import annotations

from pathlib import Path

import click

from streams_rt.cli.coordinator_access import access, call_coordinator, coordinator_options
from streams_rt.rpc.batches import BatchError
from streams_rt.rpc.messages import StatusRequest, StatusResponse
from streams_rt.runtime.upgrade import group_seen, run_upgrade
from streams_rt.runtime.upgrade_plan import Finished, Restart, UpgradePlan


def interpreter(to: Path) -> Path:
    """--to names an environment (its bin/python) or an interpreter."""
    candidate = to / "bin" / "python" if to.is_dir() else to
    if not candidate.is_file():
        raise click.BadParameter(f"{to} is neither a Python environment nor an interpreter", param_hint="--to")
    return candidate.absolute()


@click.command("upgrade")
@coordinator_options
@click.option("--to", "to", required=True, type=click.Path(exists=True, path_type=Path),
              help="The new release: its Python environment (a directory with bin/python) or interpreter.")
@click.option("--from", "upgrade_from", required=True, metavar="RELEASE",
              help="The upgrade.from value of the release you leave (its release notes name it), e.g. 2.3.")
@click.option("--latest-version", type=int, default=None,
              help="The metadata version the new release reads; verified on every member (default: they agree). "
                   "A rerun with it skips the hosts already upgraded.")
@click.option("--acceptable-recovery-lag", type=int, default=10_000, show_default=True,
              help="The lag every task's replicas must be within before the next restart.")
@click.option("--settle-timeout", "settle_timeout_s", type=float, default=300.0, show_default=True,
              help="Seconds a check may fail before the upgrade stops.")
@click.option("--dry-run", is_flag=True, help="Print the steps and the checks, restart nothing.")
def upgrade(application_id: str, state_dir: Path | None, address: str | None, truststore: Path | None, to: Path,
            upgrade_from: str, latest_version: int | None, acceptable_recovery_lag: int, settle_timeout_s: float,
            dry_run: bool) -> None:
    """Upgrade every task host to the release at --to, with both bounces and checks between them."""
    python = str(interpreter(to))
    reach = access(application_id, state_dir, address, truststore)

    def status() -> dict[str, object]:
        found: dict[str, object] = call_coordinator(reach, StatusRequest(group_id=application_id),
                                                    StatusResponse).status
        return found

    def process_id_of(endpoint: str) -> str:
        try:
            with reach.host(endpoint) as client:
                return str(client.status()["process_id"])
        except BatchError as e:
            raise click.ClickException(f"cannot ask host {endpoint} for its process id: {e}") from None

    def restart(action: Restart) -> None:
        request = {"properties": dict(action.properties), "python": action.python, "env": {},
                   "latest_supported_version": None}
        try:
            with reach.host(action.host.endpoint) as client:
                client.restart(request)
        except BatchError as e:
            raise click.ClickException(f"host {action.host.name} refused the restart: {e}; the group is safe as "
                                       "it is: fix the cause and run the upgrade again") from None

    if dry_run:
        hosts = group_seen(status(), process_id_of).hosts
        names = ", ".join(h.name for h in hosts)
        for line in [f"first bounce, host by host ({names}): restart from {python} with upgrade.from={upgrade_from}",
                     "  before each: group stable, every task RUNNING, no warm-up, every lag <= "
                     f"{acceptable_recovery_lag}; after it: the host asks for EAGER"
                     + (f" and reads version {latest_version}" if latest_version else ""),
                     "  then: every member on one metadata version",
                     "second bounce, host by host: restart without upgrade.from, same checks, the host asks for "
                     "COOPERATIVE", "dry run: nothing restarted"]:
            click.echo(line)
        return
    plan = UpgradePlan(python, upgrade_from, acceptable_recovery_lag, settle_timeout_s, latest_version)
    result = run_upgrade(plan, status, process_id_of, restart, click.echo)
    if isinstance(result, Finished):
        click.echo(result.summary)
        return
    raise click.ClickException(result.line())



