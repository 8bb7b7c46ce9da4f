"""The query endpoint's server: uvicorn on its own thread and event loop inside the task host. The
socket is bound before the host joins its group, so the endpoint goes into the subscription."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from streams_rt.config import StreamsConfig
from streams_rt.iq.app import PointLookups, QueryApp, create_app
from streams_rt.iq.metrics import MetricsEndpoint
from streams_rt.iq.settings import QuerySettings
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.http_auth import BearerCheck, HttpAccess
from streams_rt.rpc.settings import ControlPlaneSettings
from streams_rt.rpc.transport import check_exposure
from streams_rt.tasks.host import TaskHost

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 10.0


class QueryServer:
    """With the run's secret (`access.secret`) every request (metrics included) takes it as a bearer
    token; with `tls_files` (certificate chain, private key) it speaks HTTPS. Beyond loopback it
    needs both (InsecureBindError naming iq.bind.host)."""

    def __init__(self, host: TaskHost, settings: QuerySettings, access: HttpAccess = HttpAccess(),
                 tls_files: tuple[Path, Path] | None = None) -> None:
        check_exposure("the interactive-query endpoint", "iq.bind.host", settings.bind_host,
                       authenticated=access.secret is not None, tls=tls_files is not None)
        self.settings = settings
        self.endpoint = ""
        self._tls_files = tls_files
        self.queries = QueryApp(host, settings, lambda: self.endpoint, access)
        self.app = create_app(self.queries)
        self.asgi: ASGIApp = MetricsEndpoint(PointLookups(self.app, self.queries), host.metrics_registry)
        if access.secret is not None:
            self.asgi = BearerCheck(self.asgi, access.secret, "the interactive-query endpoint")
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        """Bind, serve on a thread, and return the endpoint the group is told (host:port)."""
        family = socket.AF_INET6 if ":" in self.settings.bind_host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by every accepted connection: uvicorn writes a response's head and body apart,
        # and with Nagle's algorithm the body waits for the client's delayed ACK (40 ms measured).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.settings.bind_host, self.settings.port))
        sock.listen(1024)
        port = sock.getsockname()[1]
        self.endpoint = self.settings.advertised or f"{self.settings.bind_host}:{port}"
        certificate, key = self._tls_files if self._tls_files is not None else (None, None)
        config = uvicorn.Config(self.asgi, loop="uvloop", http="httptools", ssl_certfile=certificate,
                                ssl_keyfile=key, lifespan="off", access_log=False, log_level="warning",
                                timeout_keep_alive=30)
        self._server = server = uvicorn.Server(config)
        started = threading.Event()

        def serve() -> None:
            async def run() -> None:
                started.set()
                await server.serve(sockets=[sock])
                await self.queries.aclose()

            asyncio.run(run())

        self._thread = threading.Thread(target=serve, name="streams-rt-queries", daemon=True)
        self._thread.start()
        started.wait(10)
        log.info("interactive queries at %s/v1, metrics at /metrics (bound to %s:%d)",
                 self.queries.access.url(self.endpoint), self.settings.bind_host, port)
        return self.endpoint

    def close(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)


def query_server(config: StreamsConfig, host: TaskHost) -> QueryServer | None:
    """The factory a task host process is given: the server its configuration asks for, if any."""
    settings = QuerySettings.from_config(config)
    if not settings.enabled:
        return None
    control = ControlPlaneSettings.from_config(config)
    tls_files = control.server_tls_files()
    access = HttpAccess(SharedSecret.from_environment(), tls_files is not None, control.ssl_truststore_location)
    return QueryServer(host, settings, access, tls_files)
