"""`streams-rt query STORE KEY`: a point lookup (or a window fetch) through any task host's query
endpoint, routed to the key's owner; prints the answer as JSON. The endpoints take the application
run's secret: from the coordinator file on this machine (`-a APP`), else $STREAMS_RT_AUTH_SECRET."""

from __future__ import annotations

import json
from pathlib import Path

import click

from streams_rt.cli.coordinator_access import run_secret
from streams_rt.iq.client import Client, KeyText, QueryError


@click.command("query")
@click.argument("store")
@click.argument("key")
@click.option("--url", envvar="STREAMS_RT_QUERY_URL", required=True,
              help="Any task host's query endpoint, e.g. http://127.0.0.1:8000 (or $STREAMS_RT_QUERY_URL).")
@click.option("--max-lag", type=click.IntRange(0), default=None, help="Let a standby answer within this lag.")
@click.option("--at-batch", type=click.IntRange(0), default=None, help="Only state committed at this batch.")
@click.option("--windows", is_flag=True, help="A window store: fetch the key's windows.")
@click.option("--from", "time_from", type=click.IntRange(0), default=0, help="Windows: earliest start (ms).")
@click.option("--to", "time_to", type=click.IntRange(0), default=None, help="Windows: latest start (ms).")
@click.option("--application-id", "-a", default=None,
              help="The application: its run's secret (and truststore) are read from the coordinator file the "
                   "driver wrote on this machine; else from $STREAMS_RT_AUTH_SECRET.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The application's state.dir on this machine (with -a; default: state.dir's default).")
@click.option("--truststore", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="PEM certificates to trust for an https endpoint (rpc.ssl.truststore.location).")
def query(store: str, key: str, url: str, max_lag: int | None, at_batch: int | None, windows: bool,
          time_from: int, time_to: int | None, application_id: str | None, state_dir: Path | None,
          truststore: Path | None) -> None:
    """Look KEY up in STORE; exit 1 with the host's error (404 for a missing key)."""
    secret, found_truststore = run_secret(application_id, state_dir)
    with Client(url, secret=secret, truststore=truststore or found_truststore) as client:
        try:
            if windows:
                answer = client.windows(store, KeyText(key), time_from, time_to, max_lag=max_lag, at_batch=at_batch)
            else:
                answer = client.get(store, KeyText(key), max_lag=max_lag, at_batch=at_batch)
        except QueryError as e:
            raise click.ClickException(str(e)) from None
    click.echo(json.dumps(answer.body, indent=2))
