"""The run's secret on the HTTP endpoints (the coordinator's `/metrics` and `/api/status`, a task
host's interactive queries and metrics), as Flight's calls carry it: `Authorization: Bearer
<secret>`, checked in constant time before any route runs. An ASGI middleware, so it guards every
route, those added later included; refusals are 401 with a JSON body, counted and logged at most
once a minute. Clients add the header with `bearer_headers`."""

from __future__ import annotations

import ssl
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from streams_rt.rpc.auth import SECRET_HEADER, RefusalLog, SharedSecret

UNAUTHENTICATED = (b'{"error":"UNAUTHENTICATED","message":"this endpoint takes the application run\'s secret: '
                   b'Authorization: Bearer <secret>"}')


def bearer_headers(secret: SharedSecret | None) -> dict[str, str]:
    """The header an HTTP client of this run sends (none without a secret)."""
    return {} if secret is None else {name.decode(): value.decode() for name, value in secret.call_headers()}


class BearerCheck:
    """Wraps an ASGI app: HTTP requests without the secret get 401; `open_paths` (a page that holds
    nothing, such as the status page's HTML, which then asks for the secret) pass."""

    def __init__(self, app: ASGIApp, secret: SharedSecret, server_name: str,
                 open_paths: Collection[str] = ()) -> None:
        self._app, self._secret, self._open = app, secret, frozenset(open_paths)
        self.refusals = RefusalLog(server_name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._open:
            await self._app(scope, receive, send)
            return
        presented = [value for name, value in scope["headers"] if name == SECRET_HEADER.encode()]
        if self._secret.accepts({SECRET_HEADER: presented}):
            await self._app(scope, receive, send)
            return
        self.refusals.refused_one(f"{scope.get('method', '?')} {scope['path'][:80]}")
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                (b"content-length", str(len(UNAUTHENTICATED)).encode())]})
        await send({"type": "http.response.body", "body": UNAUTHENTICATED})


@dataclass(frozen=True)
class HttpAccess:
    """How a client of this run reaches its HTTP endpoints: the secret it sends (None: the run has
    none), the scheme (HTTPS when TLS is on) and what it trusts for TLS (a PEM file; None: the
    system's roots)."""

    secret: SharedSecret | None = None
    tls: bool = False
    truststore: Path | None = None

    @classmethod
    def of_url(cls, url: str, secret: SharedSecret | None, truststore: Path | None = None) -> HttpAccess:
        """For a client given an endpoint's URL: TLS when it is https."""
        return cls(secret, url.startswith("https://"), truststore)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def url(self, endpoint: str) -> str:
        """`host:port` (as the group's metadata names an endpoint) as a URL."""
        return f"{self.scheme}://{endpoint}"

    def headers(self) -> dict[str, str]:
        return bearer_headers(self.secret)

    def verify(self) -> ssl.SSLContext | bool:
        """httpx's `verify`: the truststore, else the system's roots."""
        return ssl.create_default_context(cafile=str(self.truststore)) if self.truststore is not None else True
