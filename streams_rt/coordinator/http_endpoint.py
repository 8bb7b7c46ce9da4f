"""The coordinator's HTTP endpoint, for people and Prometheus: `/metrics` (Prometheus' text format),
`/api/status` (the operator's status object as JSON) and `/` (the live status page, which polls
`/api/status`). Read-only: nothing here changes the group, and no secret is served. With the run's
secret, `/metrics` and `/api/status` take it as a bearer token (the page itself holds nothing and
asks for it); with TLS on, the endpoint speaks HTTPS with the coordinator's certificate, so the
secret never crosses in clear. FastAPI on uvicorn, on a thread of the driver; the socket is bound
before the thread starts, so a port in use is an OSError at start-up, not a log line from a dying
thread."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import ASGIApp

from streams_rt.coordinator.prometheus import status_registry
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.http_auth import BearerCheck
from streams_rt.rpc.transport import check_exposure

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0


def status_page() -> str:
    """The page's HTML (one file, its script inline), shipped with the package."""
    return resources.files("streams_rt.coordinator").joinpath("status_page.html").read_text(encoding="utf-8")


def build_app(status: Callable[[], Mapping[str, Any]]) -> FastAPI:
    registry = status_registry(status)
    page = status_page()
    app = FastAPI(title="streams_rt coordinator", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/api/status")
    def api_status() -> JSONResponse:
        return JSONResponse(dict(status()), headers={"Cache-Control": "no-store"})

    @app.get("/")
    def index() -> HTMLResponse:
        return HTMLResponse(page)

    return app


class HttpEndpoint:
    """Serves `build_app(status)` on `host:port` (0: a free port) until `close()`; with `secret`, its
    data takes it; with `tls_files` (certificate chain, private key), over HTTPS. Beyond loopback it
    needs both (InsecureBindError naming coordinator.http.host)."""

    def __init__(self, status: Callable[[], Mapping[str, Any]], host: str, port: int, *,
                 secret: SharedSecret | None = None, tls_files: tuple[Path, Path] | None = None) -> None:
        check_exposure("the coordinator's HTTP endpoint", "coordinator.http.host", host,
                       authenticated=secret is not None, tls=tls_files is not None)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError as e:
            self._socket.close()
            raise OSError(e.errno, f"the coordinator's HTTP endpoint cannot bind {host}:{port}: {e.strerror}") from None
        self._socket.listen(128)
        bound_host, bound_port = self._socket.getsockname()[:2]
        scheme = "https" if tls_files is not None else "http"
        self.url = f"{scheme}://{f'[{bound_host}]' if family == socket.AF_INET6 else bound_host}:{bound_port}"
        app: ASGIApp = build_app(status)
        if secret is not None:
            app = BearerCheck(app, secret, "the coordinator's HTTP endpoint", open_paths={"/"})
        certificate, key = tls_files if tls_files is not None else (None, None)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                ssl_certfile=certificate, ssl_keyfile=key)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="coordinator-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"the coordinator's HTTP endpoint did not start on {self.url}")
            time.sleep(0.01)

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)
        self._socket.close()
