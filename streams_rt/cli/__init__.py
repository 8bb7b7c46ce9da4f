"""The operator command line: `streams-rt ...`. Errors print one clear line, never a traceback.

Each command group lives in its own module of this package and is registered here, once.
"""

from __future__ import annotations

import logging

import click

from streams_rt.cli.describe import describe
from streams_rt.cli.dev_broker import dev_broker
from streams_rt.cli.drain import drain
from streams_rt.cli.host import host
from streams_rt.cli.protocol import protocol
from streams_rt.cli.query import query
from streams_rt.cli.reset import reset
from streams_rt.cli.status import status
from streams_rt.cli.upgrade import upgrade
from streams_rt.kafka.dev_broker import BrokerError
from streams_rt.kafka.jvm import JvmSetupError


class _OneLineErrors(click.Group):
    """Every subcommand's expected failures (setup, broker, file system, bad values) become click's
    one `Error: ...` line and exit code 1 instead of a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (BrokerError, JvmSetupError, OSError, ValueError) as error:
            raise click.ClickException(str(error)) from None


@click.group(cls=_OneLineErrors)
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def main(verbose: bool) -> None:
    """streams_rt: Kafka Streams' stateful task model inside PySpark Structured Streaming."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


main.add_command(dev_broker)
main.add_command(status)
main.add_command(describe)
main.add_command(reset)
main.add_command(query)
main.add_command(host)
main.add_command(protocol)
main.add_command(upgrade)
main.add_command(drain)
