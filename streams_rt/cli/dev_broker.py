"""`streams-rt dev-broker ...`: a local Apache Kafka broker for development."""

from __future__ import annotations

from pathlib import Path

import click

from streams_rt.kafka.dev_broker import DevBroker, default_directory
from streams_rt.kafka.dev_cluster import ClusterInfo, DevCluster, is_cluster


@click.group("dev-broker")
def dev_broker() -> None:
    """A single-node Apache Kafka broker (KRaft) on loopback for development."""


_directory_option = click.option(
    "--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Broker directory (default: $STREAMS_RT_HOME/dev-broker or ./.streams-rt/dev-broker).")


def _cluster(directory: Path | None) -> DevCluster | None:
    """The cluster in `directory` (None: a single broker's directory, or an empty one)."""
    where = (directory or default_directory()).resolve()
    if not is_cluster(where):
        return None
    count = len([d for d in where.iterdir() if d.is_dir() and d.name.startswith("node-")])
    return DevCluster(where, count)


def _cluster_line(info: ClusterInfo) -> str:
    pids = ", ".join(f"node {n}: pid {i.pid}" for n, i in sorted(info.nodes.items()))
    return f"Kafka cluster of {len(info.nodes)} brokers running at {info.bootstrap_servers} ({pids})"


@dev_broker.command("start")
@_directory_option
@click.option("--port", type=int, default=0, show_default=True, help="Listener port; 0 picks a free one.")
@click.option("--brokers", type=click.IntRange(1, 9), default=1, show_default=True,
              help="Brokers: 3 makes a KRaft cluster of three combined broker+controller nodes (internal "
                   "topics with 3 replicas, min.insync.replicas 2) in DIR/node-<i>.")
def dev_broker_start(directory: Path | None, port: int, brokers: int) -> None:
    """Start the broker (or cluster) in the background, or reuse the one running on this directory."""
    existing = _cluster(directory)
    if brokers > 1 or existing is not None:
        if port:
            raise click.UsageError("--port is for a single broker; a cluster's nodes get free ports")
        cluster = DevCluster(directory, brokers if existing is None else len(existing.nodes))
        click.echo(_cluster_line(cluster.start(owned=False)))
        return
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
    cluster = _cluster(directory)
    if cluster is not None:
        found = cluster.status()
        if found is None:
            click.echo("Kafka cluster not running")
            raise SystemExit(1)
        click.echo(_cluster_line(found) + (f"; {len(cluster.nodes) - len(found.nodes)} node(s) down"
                                           if len(found.nodes) < len(cluster.nodes) else ""))
        return
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
    """Stop the broker (every node of a cluster) cleanly; its data stays for the next start."""
    cluster = _cluster(directory)
    if cluster is not None:
        click.echo("Kafka cluster stopped" if cluster.stop() else "Kafka cluster was not running")
        return
    if DevBroker(directory).stop():
        click.echo("Kafka broker stopped")
    else:
        click.echo("Kafka broker was not running")
