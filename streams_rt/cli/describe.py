"""`streams-rt describe`: a topology as Kafka's TopologyDescription prints it (subtopologies, their
sources, processors with their stores, sinks, and the edges between them)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from streams_rt.tasks.host import load_topology


def _argument(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise click.ClickException(f"--arg: expected NAME=VALUE, got {text!r}")
    return name, value


@click.command("describe")
@click.argument("topology", metavar="MODULE:ATTR")
@click.option("--arg", "args", multiple=True, metavar="NAME=VALUE",
              help="An argument for a topology function (a string), as the hosts pass topology_args; repeatable.")
def describe(topology: str, args: tuple[str, ...]) -> None:
    """Print the topology MODULE:ATTR (a Topology, or a function returning one) as Kafka's
    TopologyDescription. The current directory is on the import path, as with `python -m`."""
    arguments = dict(_argument(a) for a in args)
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        found = load_topology(topology, arguments)
    except ImportError as e:
        raise click.ClickException(f"cannot import the topology {topology}: {e}") from None
    except AttributeError as e:
        raise click.ClickException(f"{topology}: {e}") from None
    except TypeError as e:
        raise click.ClickException(f"{topology}: {e}") from None
    click.echo(found.describe().rstrip("\n"))
