"""The host's `/metrics` on the query endpoint, and the endpoint's own request latency. The host's
figures come in as a registry (the task host's, `streams_rt.tasks.prometheus`); this module adds a
histogram to it and serves it. Kafka Streams has no metric for interactive queries: the name is
ours."""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST, Histogram, generate_latest
from prometheus_client.registry import CollectorRegistry
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

METRICS_PATH = "/metrics"
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def request_kind(path: str) -> str:
    """A bounded label for a request path: the kind of read, never the store or the key."""
    if path.startswith("/v1/stores/"):
        rest = path.removeprefix("/v1/stores/").split("/")
        return rest[1] if len(rest) > 1 and rest[1] in ("keys", "range", "all", "windows") else "other"
    if path == "/v1/stores":
        return "stores"
    if path.startswith("/v1/metadata"):
        return "metadata"
    return "other"


class MetricsEndpoint:
    """ASGI in front of everything: `GET /metrics` answers the registry; every other request is
    timed into `streams_rt_iq_request_latency_seconds` by kind and status."""

    def __init__(self, app: ASGIApp, registry: CollectorRegistry) -> None:
        self.app, self.registry = app, registry
        self.latency = Histogram("streams_rt_iq_request_latency_seconds", "time to answer an interactive query, "
                                 "from its arrival to its last byte, by kind of request and status",
                                 ["kind", "status"], registry=registry, buckets=LATENCY_BUCKETS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == METRICS_PATH and scope["method"] == "GET":
            await self._expose(send)
            return
        started = time.perf_counter()
        status = 500

        async def timed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, timed)
        finally:
            self.latency.labels(request_kind(scope["path"]), str(status)).observe(time.perf_counter() - started)

    async def _expose(self, send: Send) -> None:
        body = await run_in_threadpool(generate_latest, self.registry)  # reads wait for stores' guards
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", CONTENT_TYPE_LATEST.encode()),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
