"""The security every streams_rt Flight endpoint shares, on a real Flight server over real sockets:
the application's secret (refused before any handler runs), TLS, and loopback unless a secret guards
the port. The server here is a minimal SecureFlightServer, as a host's batch endpoint will be."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow.flight as flight
import pytest

from streams_rt.rpc.auth import SECRET_ENV, SharedSecret
from streams_rt.rpc.transport import (
    InsecureBindError,
    SecureFlightServer,
    TlsIdentity,
    call_options,
    flight_client,
    is_loopback,
)
from tests.rpc.certificates import self_signed


class CountingServer(SecureFlightServer):
    """Answers every action with b"done" and counts the handler runs."""

    def __init__(
        self, host: str = "127.0.0.1", *, secret: SharedSecret | None = None, tls: TlsIdentity | None = None
    ) -> None:
        self.handled = 0
        self._count_lock = threading.Lock()
        super().__init__("test endpoint", host, secret=secret, tls=tls)

    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[bytes]:
        with self._count_lock:
            self.handled += 1
        return iter([b"done"])


@pytest.fixture
def secret() -> SharedSecret:
    return SharedSecret.generate()


@pytest.fixture
def server(secret: SharedSecret) -> Iterator[CountingServer]:
    s = CountingServer(secret=secret)
    yield s
    s.shutdown()


def call(address: str, headers: list[tuple[bytes, bytes]], tls_root_certs: bytes | None = None) -> bytes:
    client = flight_client(address, tls_root_certs)
    try:
        (result,) = client.do_action(flight.Action("work", b"{}"), call_options(5, headers))
        return result.body.to_pybytes()
    finally:
        client.close()


def test_a_call_with_the_secret_is_served(server: CountingServer, secret: SharedSecret) -> None:
    assert call(server.address, secret.call_headers()) == b"done" and server.handled == 1


@pytest.mark.parametrize(
    "headers",
    [
        [],
        SharedSecret.generate().call_headers(),  # another run's secret
        [(b"authorization", b"Bearer ")],
        [(b"authorization", b"not even a bearer token")],
    ],
    ids=["none", "another-runs-secret", "empty", "garbage"],
)
def test_a_call_without_the_secret_is_refused_before_any_work(
    server: CountingServer, headers: list[tuple[bytes, bytes]]
) -> None:
    with pytest.raises(flight.FlightUnauthenticatedError, match="does not carry this application's secret"):
        call(server.address, headers)
    assert server.handled == 0


def test_the_secret_twice_is_refused(server: CountingServer, secret: SharedSecret) -> None:
    """One value, exactly: a proxy that appends its own header cannot smuggle a second one in."""
    with pytest.raises(flight.FlightUnauthenticatedError):
        call(server.address, secret.call_headers() * 2)
    assert server.handled == 0


def test_refusals_are_logged_once_a_minute_with_their_count(
    server: CountingServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="streams_rt.rpc.auth")
    for _ in range(20):
        with pytest.raises(flight.FlightUnauthenticatedError):
            call(server.address, [])
    assert caplog.text.count("refused") == 1 and server.secret_check is not None
    assert server.secret_check.refused == 20


def test_the_secret_never_shows_in_a_repr_a_log_or_an_error(secret: SharedSecret) -> None:
    token = secret.environment()[SECRET_ENV]
    assert len(token) >= 43  # 32 random bytes, URL-safe base64
    assert token not in repr(secret) and token not in str(secret)
    with pytest.raises(ValueError) as e:
        SharedSecret.from_environment({SECRET_ENV: token[:20]})
    assert token[:20] not in str(e.value) and SECRET_ENV in str(e.value)


def test_the_secret_travels_to_child_processes_in_their_environment(secret: SharedSecret) -> None:
    handed = SharedSecret.from_environment(secret.environment())
    assert handed is not None and handed.accepts({"authorization": [secret.call_headers()[0][1].decode()]})
    assert SharedSecret.from_environment({}) is None


def test_unserved_flight_methods_are_refused_in_one_line(server: CountingServer, secret: SharedSecret) -> None:
    client = flight.FlightClient(server.address)
    options = call_options(5, secret.call_headers())
    try:
        for attempt in (
            lambda: client.do_get(flight.Ticket(b"x"), options).read_all(),
            lambda: list(client.list_flights(options=options)),
            lambda: client.get_flight_info(flight.FlightDescriptor.for_path("x"), options),
        ):
            with pytest.raises(flight.FlightServerError, match="does not serve") as e:
                attempt()
            assert "Traceback" not in str(e.value)
    finally:
        client.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "localhost"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "db.example.com", ""])
def test_other_hosts_need_the_secret(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(InsecureBindError) as e:
        CountingServer(host=host)
    assert "\n" not in str(e.value) and "rpc.authenticate" in str(e.value)


def test_tls_with_the_secret(tmp_path: Path, secret: SharedSecret) -> None:
    cert, key = self_signed(tmp_path)
    s = CountingServer(secret=secret, tls=TlsIdentity(cert.read_bytes(), key.read_bytes()))
    try:
        assert s.address.startswith("grpc+tls://127.0.0.1:")
        assert call(s.address, secret.call_headers(), tls_root_certs=cert.read_bytes()) == b"done"
        with pytest.raises(flight.FlightUnauthenticatedError):
            call(s.address, [], tls_root_certs=cert.read_bytes())
        with pytest.raises(flight.FlightUnavailableError):  # the certificate does not lead to a system root
            call(s.address, secret.call_headers())
        with pytest.raises(flight.FlightUnavailableError):  # plaintext to a TLS port
            call(s.address.replace("grpc+tls://", "grpc://"), secret.call_headers())
        assert s.handled == 1
    finally:
        s.shutdown()


def test_tls_identity_never_shows_its_key(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    identity = TlsIdentity(cert.read_bytes(), key.read_bytes())
    assert key.read_bytes().decode() not in repr(identity)
