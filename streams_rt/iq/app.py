"""The query endpoint as an ASGI application (FastAPI): routes, parameters, routing of keys that
live elsewhere (a 307 to the owner, or `?route=proxy`), and every refusal as a JSON error. Reads
happen in `reads.py`; where keys live in `routing.py`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import httpx
from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from streams_rt.iq import answers
from streams_rt.iq.codec import KeyRejected, decode_base64url, key_bytes
from streams_rt.iq.errors import QueryFailed, bad_request, not_found, unavailable
from streams_rt.iq.reads import Consistency, LocalReads
from streams_rt.iq.routing import GroupView, StoreInfo, store_catalog
from streams_rt.iq.settings import QuerySettings
from streams_rt.protocol import TaskId
from streams_rt.protocol.wire import INT64_MAX
from streams_rt.rpc.http_auth import HttpAccess
from streams_rt.state import TaskStateBusy
from streams_rt.tasks.host import HostedTask, TaskHost

T = TypeVar("T")
API_VERSION = "1"
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": answers.ErrorAnswer, "description": text} for status, text in (
        (400, "a key the serde rejects, a page size over the cap, a malformed range or parameter"),
        (404, "an unknown store or key"),
        (409, "`at_batch`: the state has moved past that batch"),
        (503, "restoring (with progress), a standby over `max_lag`, a task between owners, `at_batch` not "
              "committed yet, an owner that cannot be reached; Retry-After says when to ask again"),
    )
}
MOVED: dict[int | str, dict[str, Any]] = {307: {"description": "the key lives on another host: Location names it"}}

Route = Literal["redirect", "proxy"]
MaxLag = Annotated[int | None, Query(ge=0, le=INT64_MAX, description="let a standby answer within this lag")]
AtBatch = Annotated[int | None, Query(ge=0, le=INT64_MAX, description="answer only from state committed at "
                                      "this batch")]
RouteParam = Annotated[Route, Query(description="a key that lives elsewhere: `redirect` (307) or `proxy`")]
KeyPath = Annotated[str, Path(description="the key, as text its store's key serde reads (see iq.md)")]
Limit = Annotated[int | None, Query(ge=1, le=INT64_MAX, description="entries per page (at most iq.page.size.max)")]
Cursor = Annotated[str | None, Query(max_length=4096, description="`next_cursor` of the previous page")]
TaskParam = Annotated[str | None, Query(max_length=40, description="only this task's entries (e.g. `1_3`), from "
                                        "its active host: elsewhere a 307 to it, or `route=proxy`")]


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body, separators=(",", ":")).encode(), status, headers,
                    media_type="application/json")


def raw_path(request: Request) -> str:
    """The path as the client sent it, still %-encoded (a key may hold '/', '?' or '%')."""
    raw = request.scope.get("raw_path")
    return raw.decode("latin-1") if isinstance(raw, bytes) else request.url.path


class QueryApp:
    """Binds the routes to one host. `endpoint` is what this host is called in the group's
    metadata (known once the server has bound its port); `access` how the other hosts' endpoints
    are reached (scheme, the run's secret, the truststore) for redirects and proxied reads."""

    def __init__(self, host: TaskHost, settings: QuerySettings, endpoint: Callable[[], str],
                 access: HttpAccess = HttpAccess()) -> None:
        self.host, self.settings, self._endpoint, self.access = host, settings, endpoint, access
        self.catalog = store_catalog(host.topology, host.layout)
        self.reads = LocalReads(host)
        self._proxy: httpx.AsyncClient | None = None

    # -- helpers ---------------------------------------------------------------------------------
    def view(self) -> GroupView:
        meta = self.host.group_metadata()
        return GroupView(self.host.layout, meta.generation, meta.partitions_by_host, meta.standby_partitions_by_host)

    def served(self) -> dict[str, Any]:
        return {"served_by": self._endpoint(), "generation": self.host.member.status().generation}

    def store(self, name: str, windowed: bool | None = None) -> StoreInfo:
        info = self.catalog.get(name)
        if info is None:
            raise not_found("UNKNOWN_STORE", f"no store {name!r:.80}; stores: {', '.join(self.catalog) or 'none'}")
        if windowed is not None and info.windowed != windowed:
            kind = "a window store: ask /windows/{key}" if info.windowed else "a key-value store: ask /keys/{key}"
            raise bad_request("WRONG_STORE_KIND", f"store {name} is {kind}")
        return info

    def key(self, info: StoreInfo, text: str) -> bytes:
        try:
            return key_bytes(info.key_serde, text)
        except KeyRejected as e:
            raise bad_request("KEY_REJECTED", str(e), store=info.name) from None

    async def owner_of(self, request: Request, info: StoreInfo, key: bytes, demand: Consistency,
                       route: Route) -> HostedTask | Response:
        """The local copy that answers for the key, or the answer that sends the caller to the owner."""
        return await self.task_owner(request, info.task_for(key), demand, route)

    async def task_owner(self, request: Request, task: TaskId, demand: Consistency,
                         route: Route) -> HostedTask | Response:
        """The local copy of the task that answers, or the answer that sends the caller to its owner."""
        hosted = self.reads.answering(task, demand)
        if hosted is not None:
            return hosted
        owners = self.view().owners(task)
        if owners.active is None or owners.active == self._endpoint():
            raise unavailable("NOT_AVAILABLE", f"task {task} has no active host that serves it now (a rebalance "
                              "may be moving it); ask again", task=str(task))
        if route == "proxy":
            return await self.proxy(request, owners.active)
        location = f"{self.access.url(owners.active)}{raw_path(request)}"
        if request.url.query:
            location += f"?{request.url.query}"
        return json_response({"moved_to": owners.active, "task": str(task)}, 307, {"Location": location})

    async def proxy(self, request: Request, owner: str) -> Response:
        """Ask the owner (once: its own answer, a 307 included, goes back as it is)."""
        if self._proxy is None:
            self._proxy = httpx.AsyncClient(timeout=self.settings.proxy_timeout_s, headers=self.access.headers(),
                                            verify=self.access.verify())
        params = httpx.QueryParams([(k, v) for k, v in request.query_params.multi_items() if k != "route"])
        try:
            answer = await self._proxy.get(f"{self.access.url(owner)}{raw_path(request)}", params=params)
        except httpx.HTTPError as e:
            raise unavailable("OWNER_UNREACHABLE", f"the owner {owner} did not answer: {type(e).__name__}: {e}",
                              owner=owner) from None
        headers = {k: v for k, v in answer.headers.items() if k.lower() in ("location", "retry-after")}
        return Response(answer.content, answer.status_code, headers, media_type="application/json")

    async def point(self, request: Request, store: str, key: str, demand: Consistency, route: Route) -> Response:
        """`GET /v1/stores/{store}/keys/{key}`."""
        info = self.store(store, windowed=False)
        data = self.key(info, key)
        hosted = await self.owner_of(request, info, data, demand, route)
        if isinstance(hosted, Response):
            return hosted
        value, freshness = await self.read(lambda wait: self.reads.get(hosted, info, data, demand, wait))
        if value is None:
            raise not_found("KEY_NOT_FOUND", f"store {store} holds no key {key!r:.80}", store=store,
                            freshness=freshness.describe())
        return json_response({**self.served(), "store": store, "key": key, "value": value,
                              "freshness": freshness.describe()})

    @staticmethod
    async def read(read: Callable[[bool], T]) -> T:
        """Run a read on the event loop if its tasks' stores are free now (the common case: no
        thread switch), else on a worker thread that waits for them, so a reopen after a restore
        (seconds) or a commit holds up no other request."""
        try:
            return read(False)
        except TaskStateBusy:
            return await run_in_threadpool(read, True)

    async def aclose(self) -> None:
        if self._proxy is not None:
            await self._proxy.aclose()


class PointLookups:
    """ASGI in front of the app: a point lookup without a query string (the common case) is answered
    here, by the same code as its route, without FastAPI's routing and parameter validation, which
    cost as much as the lookup itself; everything else goes on to the app."""

    PREFIX = "/v1/stores/"

    def __init__(self, app: ASGIApp, queries: QueryApp) -> None:
        self.app, self.queries = app, queries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and not scope["query_string"]:
            store, found, key = scope["path"].removeprefix(self.PREFIX).partition("/keys/")
            if found and key and store and "/" not in store and scope["path"].startswith(self.PREFIX):
                try:
                    response = await self.queries.point(Request(scope), store, key, Consistency(), "redirect")
                except QueryFailed as error:
                    response = json_response(error.body(), error.status, error.headers())
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(queries: QueryApp) -> FastAPI:
    # No redirect of a path with a trailing slash to the one without: Starlette's has an empty body
    # (`/v1/stores/%2F` is one), and every answer here is JSON.
    app = FastAPI(title="streams_rt interactive queries", version=API_VERSION, redirect_slashes=False,
                  description="Live state of one task host's stores; see docs/iq.md.")
    settings = queries.settings

    @app.exception_handler(QueryFailed)
    async def refused(request: Request, error: QueryFailed) -> Response:
        return json_response(error.body(), error.status, error.headers())

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> Response:
        problems = [{"where": ".".join(map(str, e.get("loc", ()))), "problem": e.get("msg", "")}
                    for e in error.errors()]
        return json_response({"error": "BAD_PARAMETER", "message": "; ".join(f"{p['where']}: {p['problem']}"
                                                                             for p in problems)[:2000],
                              "problems": problems[:20]}, 400)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> Response:
        code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(error.status_code, "HTTP_ERROR")
        return json_response({"error": code, "message": str(error.detail)}, error.status_code)

    @app.get("/v1/stores", response_model=answers.StoresAnswer, responses=ERRORS)
    async def stores() -> Response:
        hosted = queries.host.hosted_tasks()
        found = []
        for info in queries.catalog.values():
            mine = [h for t, h in sorted(hosted.items()) if t.subtopology == info.subtopology]
            found.append({**info.describe(), "active_tasks": [str(h.task) for h in mine if not h.standby],
                          "standby_tasks": [str(h.task) for h in mine if h.standby]})
        return json_response({**queries.served(), "stores": found})

    @app.get("/v1/stores/{store}/keys/{key:path}", response_model=answers.PointAnswer,
             responses={**ERRORS, **MOVED})
    async def point(request: Request, store: str, key: KeyPath, max_lag: MaxLag = None, at_batch: AtBatch = None,
                    route: RouteParam = "redirect") -> Response:
        return await queries.point(request, store, key, Consistency(max_lag, at_batch), route)

    def page_size(limit: int | None) -> int:
        if limit is None:
            return settings.default_page_size
        if limit > settings.page_size_max:
            raise bad_request("PAGE_TOO_LARGE", f"limit {limit} is over the cap of {settings.page_size_max} "
                              "(iq.page.size.max)", cap=settings.page_size_max)
        return limit

    async def scan(info: StoreInfo, start: bytes | None, end: bytes | None, limit: int | None, cursor: str | None,
                   demand: Consistency, tasks: list[HostedTask] | None = None) -> Response:
        """A page over `tasks` (default: the store's tasks that answer here)."""
        size = page_size(limit)
        if cursor is not None:
            try:
                after = decode_base64url(cursor, "cursor")
            except KeyRejected as e:
                raise bad_request("BAD_CURSOR", str(e)) from None
            if end is not None and after >= end:
                raise bad_request("BAD_CURSOR", "the cursor lies past the range's end")
            start = max(start or b"", after + b"\x00")
        if tasks is None:
            tasks = queries.reads.local_tasks(info, demand)
        entries, next_cursor, fresh = await queries.read(
            lambda wait: queries.reads.range(tasks, info, start, end, size, demand, wait))
        return json_response({**queries.served(), "store": info.name, "entries": entries,
                              "next_cursor": next_cursor, "freshness": [f.describe() for f in fresh]})

    @app.get("/v1/stores/{store}/range", response_model=answers.RangeAnswer, responses=ERRORS)
    async def key_range(store: str, lower: Annotated[str, Query(alias="from", description="first key (included)")],
                        upper: Annotated[str, Query(alias="to", description="last key (included)")],
                        limit: Limit = None, cursor: Cursor = None, max_lag: MaxLag = None,
                        at_batch: AtBatch = None) -> Response:
        info = queries.store(store, windowed=False)
        start, last = queries.key(info, lower), queries.key(info, upper)
        if start > last:
            raise bad_request("BAD_RANGE", f"from {lower!r:.80} comes after to {upper!r:.80} in the store's key "
                              "order (serialized bytes)")
        return await scan(info, start, last + b"\x00", limit, cursor, Consistency(max_lag, at_batch))

    @app.get("/v1/stores/{store}/all", response_model=answers.RangeAnswer, responses={**ERRORS, **MOVED})
    async def everything(request: Request, store: str, limit: Limit = None, cursor: Cursor = None,
                         max_lag: MaxLag = None, at_batch: AtBatch = None, task: TaskParam = None,
                         route: RouteParam = "redirect") -> Response:
        info = queries.store(store, windowed=False)
        demand = Consistency(max_lag, at_batch)
        if task is None:
            return await scan(info, None, None, limit, cursor, demand)
        found = info.task_named(task)
        if found is None:
            raise bad_request("BAD_TASK", f"store {store} has no task {task!r:.40}; its tasks: "
                              f"{', '.join(str(t) for t in info.tasks())}")
        hosted = await queries.task_owner(request, found, demand, route)
        if isinstance(hosted, Response):
            return hosted
        return await scan(info, None, None, limit, cursor, demand, [hosted])

    @app.get("/v1/stores/{store}/windows/{key:path}", response_model=answers.WindowAnswer,
             responses={**ERRORS, **MOVED})
    async def windows(request: Request, store: str, key: KeyPath,
                      time_from: Annotated[int, Query(alias="from", ge=0, le=INT64_MAX,
                                                      description="earliest window start (ms)")] = 0,
                      time_to: Annotated[int, Query(alias="to", ge=0, le=INT64_MAX,
                                                    description="latest window start (ms)")] = INT64_MAX,
                      max_lag: MaxLag = None, at_batch: AtBatch = None, route: RouteParam = "redirect") -> Response:
        info = queries.store(store, windowed=True)
        if time_from > time_to:
            raise bad_request("BAD_RANGE", f"from {time_from} is after to {time_to}")
        data = queries.key(info, key)
        demand = Consistency(max_lag, at_batch)
        hosted = await queries.owner_of(request, info, data, demand, route)
        if isinstance(hosted, Response):
            return hosted
        rows, freshness = await queries.read(
            lambda wait: queries.reads.windows(hosted, info, data, time_from, time_to, demand, wait))
        return json_response({**queries.served(), "store": store, "key": key, "windows": rows,
                              "freshness": freshness.describe()})

    @app.get("/v1/metadata", response_model=answers.MetadataAnswer, responses=ERRORS)
    async def metadata() -> Response:
        view = queries.view().describe()
        return json_response({**queries.served(), "hosts": view["hosts"],
                              "stores": [info.describe() for info in queries.catalog.values()]})

    @app.get("/v1/metadata/{store}/keys/{key:path}", response_model=answers.KeyMetadataAnswer, responses=ERRORS)
    async def key_metadata(store: str, key: KeyPath) -> Response:
        info = queries.store(store)
        task = info.task_for(queries.key(info, key))
        owners = queries.view().owners(task)
        return json_response({**queries.served(), "store": store, "key": key, "task": str(task),
                              "partition": task.partition, "active": owners.active,
                              "standbys": list(owners.standbys)})

    return app
