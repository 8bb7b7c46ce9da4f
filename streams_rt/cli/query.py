"""`streams-rt query STORE KEY`: a point lookup (or a window fetch) through any task host's query
endpoint, routed to the key's owner; prints the answer as JSON."""

from __future__ import annotations

import json

import click

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
def query(store: str, key: str, url: str, max_lag: int | None, at_batch: int | None, windows: bool,
          time_from: int, time_to: int | None) -> None:
    """Look KEY up in STORE; exit 1 with the host's error (404 for a missing key)."""
    with Client(url) as client:
        try:
            if windows:
                answer = client.windows(store, KeyText(key), time_from, time_to, max_lag=max_lag, at_batch=at_batch)
            else:
                answer = client.get(store, KeyText(key), max_lag=max_lag, at_batch=at_batch)
        except QueryError as e:
            raise click.ClickException(str(e)) from None
    click.echo(json.dumps(answer.body, indent=2))
