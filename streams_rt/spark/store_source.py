"""Live state as a batch DataFrame: the `streams_rt_store` data source behind
`StreamsRuntime.read_store(store, at_batch=None)`.

`partitions` (on the driver) reads the group's metadata from any host's query endpoint and makes one
Spark partition per task of the store, for its active host; `read` (on an executor) pages through
the task's entries with the endpoint's `/all?task=` and its cursor, following a 307 to a task that
moved, and asking again, until `timeout_ms`, when the answer is a 503 (restoring, between owners,
`at_batch` not committed yet) or the host does not answer (the owner is looked up again). Rows are
(key, value, task, batch); see store_columns.py for the types.

Without `at_batch`, each page is committed state of its task, and `batch` says which batch it was
committed at (a task that commits between two pages gives the later pages a later batch). With
`at_batch=B`, every row is from state committed at B on its task: one consistent cut of the store.
A task past B fails the read (409: the cut is gone), as does one that never reaches B in time.

The endpoints take the run's secret (the `streams_rt.auth.secret` option, which Spark redacts) and
speak HTTPS when TLS is on (`rpc.ssl.enabled`, trusting `rpc.ssl.truststore.location`). A 307 is
followed here, not by httpx, which would drop the secret on the way to another host."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.http_auth import HttpAccess
from streams_rt.spark.store_columns import UndecodableValue, column_value

NAME = "streams_rt_store"
PAGE_SIZE = 1_000  # the default iq.page.size.max; a host with a lower cap says so, and its cap is used
TIMEOUT_MS = 60_000
SECRET_OPTION = "streams_rt.auth.secret"  # as the streaming source's: Spark redacts option keys matching "secret"
TLS_OPTION = "rpc.ssl.enabled"
TRUSTSTORE_OPTION = "rpc.ssl.truststore.location"


class StoreReadFailed(RuntimeError):
    """A store's task could not be read: says which task, where and why."""


@dataclass(frozen=True)
class StoreOptions:
    store: str
    key_serde: str
    value_serde: str
    schema: str
    hosts: tuple[str, ...]  # query endpoints (host:port) to read the group's metadata from
    at_batch: int | None
    timeout_ms: int
    access: HttpAccess = field(default_factory=HttpAccess)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StoreOptions:
        try:
            at_batch, secret, truststore = options.get("at_batch"), options.get(SECRET_OPTION), options.get(
                TRUSTSTORE_OPTION)
            access = HttpAccess(SharedSecret(secret) if secret else None, options.get(TLS_OPTION) == "true",
                                Path(truststore) if truststore else None)
            return cls(options["store"], options["key_serde"], options["value_serde"], options["schema"],
                       tuple(h for h in options["hosts"].split(",") if h),
                       None if at_batch in (None, "") else int(at_batch),
                       int(options.get("timeout_ms", TIMEOUT_MS)), access)
        except KeyError as e:
            raise ValueError(f"the {NAME} source is made by StreamsRuntime.read_store(); option {e} is "
                             "missing") from None


@dataclass(frozen=True)
class TaskEntries(InputPartition):
    """One task of the store and the host that held it active when the read was planned."""

    task: str
    endpoint: str


class StoreDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return StoreOptions.parse(self.options).schema

    def reader(self, schema: Any) -> StoreReader:
        return StoreReader(StoreOptions.parse(self.options))


class StoreReader(DataSourceReader):
    def __init__(self, options: StoreOptions) -> None:
        self.options = options

    def partitions(self) -> list[TaskEntries]:
        """One partition per task of the store (tasks without an active host now get an empty
        endpoint: `read` looks their owner up again)."""
        metadata = self._metadata()
        store = next((s for s in metadata["stores"] if s["name"] == self.options.store), None)
        if store is None:
            raise StoreReadFailed(f"no store {self.options.store!r} in the application; stores: "
                                  f"{', '.join(s['name'] for s in metadata['stores'])}")
        tasks = [f"{store['subtopology']}_{p}" for p in range(store["partitions"])]
        return [TaskEntries(task, _active_host(metadata, task)) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, Any, str, int | None]]:
        import httpx

        assert isinstance(partition, TaskEntries)
        options, task, endpoint = self.options, partition.task, partition.endpoint
        deadline = time.monotonic() + options.timeout_ms / 1000
        params: dict[str, Any] = {"task": task, "limit": PAGE_SIZE}
        if options.at_batch is not None:
            params["at_batch"] = options.at_batch
        why = "no active host"
        access = options.access
        with httpx.Client(timeout=30, headers=access.headers(), verify=access.verify()) as http:
            while True:
                answer, refused = None, {}
                if endpoint:
                    try:
                        answer = http.get(f"{access.url(endpoint)}/v1/stores/{options.store}/all", params=params)
                    except httpx.TransportError as e:
                        why = f"{endpoint} did not answer: {type(e).__name__}: {e}"
                if answer is not None and answer.status_code == 200:
                    body = answer.json()
                    yield from self._rows(task, body)
                    if body["next_cursor"] is None:
                        return
                    params["cursor"] = body["next_cursor"]
                    continue
                if answer is not None and answer.status_code == 307:  # the task moved: ask its owner
                    endpoint = str(_json(answer).get("moved_to", ""))
                    continue
                if answer is not None:
                    refused = _json(answer)
                    why = f"{answer.status_code} {refused.get('error')}: {refused.get('message')}"
                    if answer.status_code == 400 and refused.get("error") == "PAGE_TOO_LARGE":
                        params["limit"] = int(refused["cap"])
                        continue
                    if answer.status_code != 503:
                        raise StoreReadFailed(f"store {options.store}, task {task} at {endpoint}: {why}")
                if time.monotonic() > deadline:
                    raise StoreReadFailed(f"store {options.store}, task {task}: not read within "
                                          f"{options.timeout_ms} ms; last: {why}")
                time.sleep(0.5)
                if answer is None or refused["error"] in ("NOT_AVAILABLE", "OWNER_UNREACHABLE"):
                    endpoint = _active_host(self._metadata(), task)  # the task may have moved

    def _rows(self, task: str, body: Mapping[str, Any]) -> Iterator[tuple[Any, Any, str, int | None]]:
        batch = next((f["committed_batch"] for f in body["freshness"] if f["task"] == task), None)
        for entry in body["entries"]:
            try:
                key = column_value(self.options.key_serde, entry["key"])
                value = column_value(self.options.value_serde, entry["value"])
            except UndecodableValue as e:
                where = f"store {self.options.store}, task {task}, key {entry['key']!r:.80}"
                raise StoreReadFailed(f"{where}: {e}") from None
            yield key, value, task, batch

    def _metadata(self) -> dict[str, Any]:
        """The group's metadata from the first host that answers."""
        import httpx

        problems = []
        for host in self.options.hosts:
            try:
                answer = httpx.get(f"{self.options.access.url(host)}/v1/metadata", timeout=10,
                                   headers=self.options.access.headers(), verify=self.options.access.verify())
                if answer.status_code == 200:
                    found: dict[str, Any] = answer.json()
                    return found
                problems.append(f"{host}: {answer.status_code}")
            except httpx.TransportError as e:
                problems.append(f"{host}: {type(e).__name__}")
        raise StoreReadFailed(f"no task host's query endpoint answered ({'; '.join(problems) or 'none known'})")


def _active_host(metadata: Mapping[str, Any], task: str) -> str:
    return next((str(h["endpoint"]) for h in metadata["hosts"] if task in h["active_tasks"]), "")


def _json(answer: Any) -> dict[str, Any]:
    try:
        body = answer.json()
    except ValueError:
        return {"error": "NOT_JSON", "message": answer.text[:200]}
    return body if isinstance(body, dict) else {"error": "NOT_JSON", "message": str(body)[:200]}
