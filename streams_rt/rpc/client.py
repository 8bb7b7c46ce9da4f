"""Typed Arrow Flight client for the coordinator's actions: one connection per member."""

from __future__ import annotations

from typing import TypeVar

import pyarrow.flight as flight

from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.messages import REQUESTS, Request, Response
from streams_rt.rpc.transport import call_options, flight_client

R = TypeVar("R", bound=Response)


class CoordinatorUnavailable(Exception):
    """The RPC itself failed (coordinator down or unreachable); retriable after a back-off."""


class AuthenticationRefused(Exception):
    """The server refused the call: it did not carry this application's secret. Retrying with the
    same secret cannot help (fatal)."""


class GroupClient:
    def __init__(
        self,
        address: str,
        *,
        timeout_s: float = 10.0,
        secret: SharedSecret | None = None,
        tls_root_certs: bytes | None = None,
    ) -> None:
        """`secret` defaults to the one the driver handed this process (SharedSecret.from_environment):
        none, when the driver handed none. `tls_root_certs` (PEM) are what a `grpc+tls://` coordinator's
        certificate must lead to (None: the system's roots)."""
        self.address = address
        self._client = flight_client(address, tls_root_certs)
        self._timeout_s = timeout_s
        chosen = secret if secret is not None else SharedSecret.from_environment()
        self._headers = chosen.call_headers() if chosen is not None else []

    def call(self, request: Request, response_cls: type[R], *, extra_timeout_s: float = 0.0) -> R:
        """Send one action and parse its schema'd response; errors stay in the response."""
        expected = REQUESTS[request.ACTION][1]
        assert response_cls is expected, f"{request.ACTION} answers {expected.__name__}"
        options = call_options(self._timeout_s + extra_timeout_s, self._headers)
        try:
            results = list(self._client.do_action(flight.Action(request.ACTION, request.to_bytes()), options))
        except flight.FlightUnauthenticatedError as e:
            raise AuthenticationRefused(f"{request.ACTION} to {self.address}: {e}") from None
        except (flight.FlightError, OSError) as e:
            raise CoordinatorUnavailable(f"{request.ACTION} to {self.address} failed: {e}") from e
        if len(results) != 1:
            raise CoordinatorUnavailable(f"{request.ACTION}: expected one result, got {len(results)}")
        return response_cls.from_bytes(results[0].body.to_pybytes())

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> GroupClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
