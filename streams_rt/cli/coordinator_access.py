"""How a CLI command reaches a running coordinator: by application id through the coordinator file
the driver wrote on this machine (address and secret), or by `--coordinator` with the secret in
`STREAMS_RT_AUTH_SECRET` (the variable the driver hands its hosts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from streams_rt.config.registry import default_state_dir
from streams_rt.coordinator.discovery import read_coordinator_file
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.batches import HostClient
from streams_rt.rpc.client import AuthenticationRefused, CoordinatorUnavailable, GroupClient
from streams_rt.rpc.errors import GroupErrorException
from streams_rt.rpc.messages import Request, Response

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


@dataclass(frozen=True)
class Access:
    """Where the coordinator is and what a call to it, or to one of its hosts, carries."""

    address: str
    secret: SharedSecret | None
    tls_root_certs: bytes | None

    def coordinator(self) -> GroupClient:
        return GroupClient(self.address, secret=self.secret, tls_root_certs=self.tls_root_certs)

    def host(self, endpoint: str, timeout_s: float = 60.0) -> HostClient:
        """A client of one task host's batch endpoint (hosts take the run's secret too)."""
        return HostClient(endpoint, timeout_s=timeout_s, secret=self.secret, tls_root_certs=self.tls_root_certs)


def access(application_id: str, state_dir: Path | None, address: str | None, truststore: Path | None) -> Access:
    """The coordinator's address and the run's secret and certificates, from the coordinator file
    (by application id) or from --coordinator and $STREAMS_RT_AUTH_SECRET."""
    if address is None:
        found = read_coordinator_file(state_dir or default_state_dir(), application_id)
        address = found.address
        secret = SharedSecret(found.secret) if found.secret is not None else None
        if truststore is None and found.truststore is not None:
            truststore = Path(found.truststore)
    else:
        secret = SharedSecret.from_environment()
    certificates = truststore.read_bytes() if truststore is not None else None
    return Access(address, secret, certificates)


def run_secret(application_id: str | None, state_dir: Path | None) -> tuple[SharedSecret | None, Path | None]:
    """The run's secret and truststore for a client of its HTTP endpoints: from the coordinator file
    of `application_id` on this machine, else $STREAMS_RT_AUTH_SECRET (and no truststore)."""
    if application_id is None:
        return SharedSecret.from_environment(), None
    found = read_coordinator_file(state_dir or default_state_dir(), application_id)
    return (SharedSecret(found.secret) if found.secret is not None else None,
            Path(found.truststore) if found.truststore is not None else None)


R = TypeVar("R", bound=Response)


def call_coordinator(reach: Access, request: Request, response_type: type[R]) -> R:
    """One call to the coordinator; every way it can fail becomes one `Error:` line."""
    try:
        with reach.coordinator() as client:
            response = client.call(request, response_type)
            response.raise_for_error()
    except AuthenticationRefused:
        raise click.ClickException("the coordinator refused the secret (is this the run's secret?)") from None
    except CoordinatorUnavailable as e:
        raise click.ClickException(f"cannot reach the coordinator: {str(e).splitlines()[0]}") from None
    except GroupErrorException as e:
        raise click.ClickException(f"the coordinator answered {e.error.name}: {e.message}") from None
    return response
