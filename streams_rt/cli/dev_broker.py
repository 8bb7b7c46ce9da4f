"""`streams-rt dev-broker ...`: a local Apache Kafka broker for development."""

from __future__ import annotations

from pathlib import Path

import click

from streams_rt.kafka.dev_broker import DevBroker


@click.group("dev-broker")
def dev_broker() -> None:
    """A single-node Apache Kafka broker (KRaft) on loopback for development."""


_directory_option = click.option(
    "--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Broker directory (default: $STREAMS_RT_HOME/dev-broker or ./.streams-rt/dev-broker).")


@dev_broker.command("start")
@_directory_option
@click.option("--port", type=int, default=0, show_default=True, help="Listener port; 0 picks a free one.")
def dev_broker_start(directory: Path | None, port: int) -> None:
    """Start the broker in the background (or reuse the one running on this directory)."""
    info = DevBroker(directory, port=port).start(owned=False)
    if info.reused:
        click.echo(f"Kafka broker already running at {info.bootstrap_servers} (pid {info.pid})")
    else:
        click.echo(f"Kafka broker running at {info.bootstrap_servers} (pid {info.pid}, "
                   f"started in {info.startup_seconds:.1f} s, log {info.log_file})")


@dev_broker.command("status")
@_directory_option
def dev_broker_status(directory: Path | None) -> None:
    """Say whether the broker runs and where, and who shares it; exit 1 when it does not run, 2 when it
    does not answer, 3 while it is starting."""
    info = DevBroker(directory).status()
    if info is None:
        click.echo("Kafka broker not running")
        raise SystemExit(1)
    if info.starting:
        click.echo(f"Kafka broker (pid {info.pid}) is starting; ask again in a few seconds (log {info.log_file})")
        raise SystemExit(3)
    if not info.answering:
        click.echo(f"Kafka broker (pid {info.pid}) is running but not answering at {info.bootstrap_servers}; "
                   f"`streams-rt dev-broker stop` ends it (log {info.log_file})")
        raise SystemExit(2)
    shared = f", used by pid {', '.join(map(str, info.holders))}" if info.holders else ""
    click.echo(f"Kafka broker running at {info.bootstrap_servers} (pid {info.pid}{shared}, log {info.log_file})")


@dev_broker.command("stop")
@_directory_option
def dev_broker_stop(directory: Path | None) -> None:
    """Stop the broker cleanly; its data stays for the next start."""
    if DevBroker(directory).stop():
        click.echo("Kafka broker stopped")
    else:
        click.echo("Kafka broker was not running")
