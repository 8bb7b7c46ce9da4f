"""How a CLI command reaches a running coordinator: by application id through the coordinator file
the driver wrote on this machine (address and secret), or by `--coordinator` with the secret in
`STREAMS_RT_AUTH_SECRET` (the variable the driver hands its hosts)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from streams_rt.config.registry import default_state_dir
from streams_rt.coordinator.discovery import read_coordinator_file
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.client import GroupClient

F = TypeVar("F", bound=Callable[..., Any])


def coordinator_options(command: F) -> F:
    """--application-id, --state-dir, --coordinator and --truststore."""
    for option in reversed([
        click.option("--application-id", "-a", required=True, help="The application (its application.id)."),
        click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="The application's state.dir on this machine, where the driver wrote its coordinator "
                          "file (default: state.dir's default)."),
        click.option("--coordinator", "address", default=None, metavar="ADDRESS",
                     help="The coordinator's address (grpc://host:port), for a driver on another machine; the "
                          "secret is then read from $STREAMS_RT_AUTH_SECRET."),
        click.option("--truststore", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
                     help="PEM certificates to trust for a TLS coordinator (rpc.ssl.truststore.location)."),
    ]):
        command = option(command)
    return command


def connect(application_id: str, state_dir: Path | None, address: str | None,
            truststore: Path | None) -> GroupClient:
    """A client of the application's coordinator, carrying its secret. ValueError (one line) when
    no coordinator file names it."""
    if address is None:
        found = read_coordinator_file(state_dir or default_state_dir(), application_id)
        address = found.address
        secret = SharedSecret(found.secret) if found.secret is not None else None
        if truststore is None and found.truststore is not None:
            truststore = Path(found.truststore)
    else:
        secret = SharedSecret.from_environment()
    certificates = truststore.read_bytes() if truststore is not None else None
    return GroupClient(address, secret=secret, tls_root_certs=certificates)
