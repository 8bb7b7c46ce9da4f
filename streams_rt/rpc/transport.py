"""The security every streams_rt endpoint shares (the coordinator's Flight and HTTP ports, a task
host's batch endpoint, its interactive-query endpoint): the secret check, TLS as a switch, loopback
unless the secret guards the port and TLS keeps it from crossing in clear, and clean refusals of the
Flight methods an endpoint does not serve."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NoReturn

import pyarrow.flight as flight

from streams_rt.rpc.auth import SecretCheck, SharedSecret


@dataclass(frozen=True)
class TlsIdentity:
    """A server's PEM certificate chain and private key."""

    certificate_chain: bytes
    private_key: bytes = field(repr=False)


# Two Flight client calls typed as pyarrow takes them, where pyarrow-stubs declares str.
def call_options(timeout_s: float | None, headers: list[tuple[bytes, bytes]]) -> flight.FlightCallOptions:
    """Options of a Flight call; pyarrow takes the headers as bytes only."""
    return flight.FlightCallOptions(timeout=timeout_s, headers=headers)  # type: ignore[arg-type]


def flight_client(location: str, tls_root_certs: bytes | None = None) -> flight.FlightClient:
    """A Flight client; `tls_root_certs` are PEM bytes (None: the system's roots)."""
    return flight.FlightClient(location, tls_root_certs=tls_root_certs)  # type: ignore[arg-type]


class InsecureBindError(ValueError):
    """A server was asked to listen beyond loopback without the application's secret and TLS."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(server: str, key: str, host: str, *, authenticated: bool, tls: bool) -> None:
    """Beyond loopback a server must take the run's secret and speak TLS: without the secret anyone
    on the network may call it, and without TLS the secret itself crosses the network in clear (and
    with it the right to restart hosts). Raises InsecureBindError, one line naming `key`."""
    if is_loopback(host):
        return
    missing = [need for need, ok in (("rpc.authenticate=true", authenticated), ("rpc.ssl.enabled=true", tls))
               if not ok]
    if missing:
        raise InsecureBindError(f"{key}={host}: {server} listens beyond loopback only with {' and '.join(missing)}"
                                " (or bind it to 127.0.0.1)")


def flight_address(scheme: str, host: str, port: int) -> str:
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


class SecureFlightServer(flight.FlightServerBase):
    """Base of streams_rt's Flight servers. With `secret`, every call without it is refused before
    its handler runs; with `tls`, the server speaks only TLS (`grpc+tls://`). Without both it binds
    loopback only: anything else raises InsecureBindError naming `bind_key`, the setting that chose
    the address. Flight methods the subclass does not override are refused with a one-line error
    (pyarrow would send the client a traceback)."""

    def __init__(
        self, name: str, host: str = "127.0.0.1", port: int = 0, *,
        secret: SharedSecret | None = None, tls: TlsIdentity | None = None, bind_key: str = "bind host",
    ) -> None:
        check_exposure(name, bind_key, host, authenticated=secret is not None, tls=tls is not None)
        self.name = name
        self.host = host
        self.scheme = "grpc+tls" if tls is not None else "grpc"
        self.secret_check = SecretCheck(secret, name) if secret is not None else None
        # pyarrow takes PEM bytes for both; pyarrow-stubs declares str.
        certificates: list[tuple[str, str]] | None = (
            [flight.CertKeyPair(tls.certificate_chain, tls.private_key)] if tls else None  # type: ignore[arg-type]
        )
        super().__init__(
            flight_address(self.scheme, host, port),
            tls_certificates=certificates,
            middleware={"secret": self.secret_check} if self.secret_check is not None else None,
        )

    @property
    def address(self) -> str:
        return flight_address(self.scheme, self.host, self.port)

    def _not_served(self, method: str) -> NoReturn:
        raise flight.FlightServerError(f"{self.name} does not serve {method}")

    # Three signatures as pyarrow calls them, where pyarrow-stubs says otherwise: list_flights gets
    # bytes, get_schema must return a SchemaResult, list_actions may return (type, description) tuples
    # (subclasses list theirs in `action_types`).
    def list_flights(  # type: ignore[override]
        self, context: flight.ServerCallContext, criteria: bytes,
    ) -> Iterator[flight.FlightInfo]:
        self._not_served("list_flights")

    def get_flight_info(self, context: flight.ServerCallContext,
                        descriptor: flight.FlightDescriptor) -> flight.FlightInfo:
        self._not_served("get_flight_info")

    def get_schema(  # type: ignore[override]
        self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor,
    ) -> flight.SchemaResult:
        self._not_served("get_schema")

    def do_get(self, context: flight.ServerCallContext, ticket: flight.Ticket) -> flight.FlightDataStream:
        self._not_served("do_get")

    def do_put(
        self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor,
        reader: flight.MetadataRecordBatchReader, writer: flight.FlightMetadataWriter,
    ) -> None:
        self._not_served("do_put")

    def do_exchange(
        self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor,
        reader: flight.MetadataRecordBatchReader, writer: flight.MetadataRecordBatchWriter,
    ) -> None:
        self._not_served("do_exchange")

    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:  # type: ignore[override]
        return self.action_types()

    def action_types(self) -> list[tuple[str, str]]:
        """(name, description) of each action the server serves."""
        return []

    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[bytes]:
        self._not_served(f"action {action.type[:40]!r}")

