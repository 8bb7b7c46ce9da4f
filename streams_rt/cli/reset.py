"""`streams-rt reset`: start an application over, as kafka-streams-application-reset does. It deletes
the application's internal topics (Kafka's rule: `<application.id>-...-changelog` and
`<application.id>-...-repartition`, and the coordinator's `<application.id>-coordinator`) and its
local state (`<state.dir>/<application.id>`), after a confirmation; `--dry-run` only lists them. It
refuses while the application's coordinator runs on this machine. As with Kafka's tool, the rule is
a name pattern: an application whose id starts with this one's and a `-` has topics that match it
too, so read the list before you confirm."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from streams_rt.config.registry import default_state_dir
from streams_rt.coordinator.discovery import DiscoveryError, coordinator_file, read_coordinator_file
from streams_rt.kafka.reachability import quiet_client_config, require_broker

TIMEOUT_S = 30.0


def internal_topics(topics: set[str], application_id: str) -> list[str]:
    """The application's internal topics among `topics`, by Kafka's naming rule."""
    prefix = f"{application_id}-"
    return sorted(t for t in topics if t == f"{prefix}coordinator"
                  or (t.startswith(prefix) and t.endswith(("-changelog", "-repartition"))))


@click.command("reset")
@click.option("--application-id", "-a", required=True, help="The application (its application.id).")
@click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT[,...]",
              help="The Kafka cluster (bootstrap.servers).")
@click.option("--state-dir", "state_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="A state.dir on this machine to delete the application's state from (repeatable; default: "
                   "state.dir's default).")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@click.option("--force", "-y", is_flag=True, help="Do not ask for confirmation.")
def reset(application_id: str, bootstrap: str, state_dirs: tuple[Path, ...], dry_run: bool, force: bool) -> None:
    """Delete an application's internal topics and local state, so that it starts over.

    Stop the application first. Internal topics are found by Kafka's rule (<application.id>-...-changelog,
    <application.id>-...-repartition, <application.id>-coordinator): read the list before confirming.
    Input and output topics are kept; so is Spark's checkpoint
    (delete the query's checkpointLocation too, or Spark resumes where it stopped). On a cluster,
    each executor's state goes with the executor's working directory."""
    directories = list(state_dirs) or [default_state_dir()]
    for directory in directories:
        try:
            running = read_coordinator_file(directory, application_id)
        except DiscoveryError:
            continue
        raise click.ClickException(f"application {application_id!r} is running (its coordinator is pid "
                                   f"{running.pid} at {running.address}): stop it before resetting it")
    require_broker(bootstrap)  # one line (KafkaUnreachable) rather than librdkafka's reconnect log
    admin = AdminClient({"bootstrap.servers": bootstrap, **quiet_client_config()})
    try:
        topics = internal_topics(set(admin.list_topics(timeout=TIMEOUT_S).topics), application_id)
    except KafkaException as e:
        raise click.ClickException(f"cannot list the topics of {bootstrap}: {e.args[0].str()}") from None
    state = [d / application_id for d in directories if (d / application_id).exists()]
    stale = [coordinator_file(d, application_id) for d in directories if coordinator_file(d, application_id).exists()]
    if not topics and not state and not stale:
        click.echo(f"Nothing to reset for application {application_id}: no internal topics, no local state.")
        return
    verb = "Would delete" if dry_run else "Deleting"
    for topic in topics:
        click.echo(f"{verb} internal topic {topic}")
    for path in [*state, *stale]:
        click.echo(f"{verb} local state {path}")
    if dry_run:
        click.echo("Dry run: nothing was deleted.")
        return
    if not force:
        click.confirm(f"Delete these {len(topics)} topics and {len(state) + len(stale)} local paths?", abort=True)
    _delete_topics(admin, topics)
    for path in state:
        shutil.rmtree(path)
    for path in stale:
        path.unlink(missing_ok=True)
    click.echo(f"Application {application_id} reset: {len(topics)} topics and {len(state) + len(stale)} local "
               "paths deleted.")


def _delete_topics(admin: AdminClient, topics: list[str]) -> None:
    if not topics:
        return
    failed = []
    for topic, future in admin.delete_topics(topics, operation_timeout=TIMEOUT_S).items():
        try:
            future.result()
        except KafkaException as e:
            failed.append(f"{topic} ({e.args[0].str()})")
    if failed:
        raise click.ClickException(f"cannot delete {', '.join(failed)}")
