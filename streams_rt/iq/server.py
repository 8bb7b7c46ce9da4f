"""The query endpoint's server: uvicorn on its own thread and event loop inside the task host. The
socket is bound before the host joins its group, so the endpoint goes into the subscription."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading

import uvicorn

from streams_rt.config import StreamsConfig
from streams_rt.iq.app import PointLookups, QueryApp, create_app
from streams_rt.iq.metrics import MetricsEndpoint
from streams_rt.iq.settings import QuerySettings
from streams_rt.tasks.host import TaskHost

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 10.0


class QueryServer:
    def __init__(self, host: TaskHost, settings: QuerySettings) -> None:
        self.settings = settings
        self.endpoint = ""
        self.queries = QueryApp(host, settings, lambda: self.endpoint)
        self.app = create_app(self.queries)
        self.asgi = MetricsEndpoint(PointLookups(self.app, self.queries), host.metrics_registry)
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
        config = uvicorn.Config(self.asgi, loop="uvloop", http="httptools",
                                lifespan="off", access_log=False, log_level="warning", timeout_keep_alive=30)
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
        log.info("interactive queries at http://%s/v1, metrics at /metrics (bound to %s:%d)", self.endpoint,
                 self.settings.bind_host, port)
        return self.endpoint

    def close(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)


def query_server(config: StreamsConfig, host: TaskHost) -> QueryServer | None:
    """The factory a task host process is given: the server its configuration asks for, if any."""
    settings = QuerySettings.from_config(config)
    return QueryServer(host, settings) if settings.enabled else None
