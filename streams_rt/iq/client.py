"""A Python client for the query endpoint: `Client(bootstrap_url)` reads the group's metadata from
any host, routes each key to the host that holds it (murmur2 over the key's bytes, as the hosts
do), and follows the metadata when it changes (a 307 from a host, a host that does not answer).
Every request carries the application run's secret when there is one (`secret`, else the one in
$STREAMS_RT_AUTH_SECRET, as the driver hands it to its hosts); an https bootstrap URL makes every
host's URL https, checked against `truststore` (else the system's roots).

    with Client("http://127.0.0.1:8000") as client:
        client.get("word-counts", "hello").value
        for key, value in client.all("word-counts"): ...
"""

from __future__ import annotations

import heapq
import json
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from streams_rt.iq.codec import encode_base64url, key_bytes
from streams_rt.kafka.partitioner import partition_for
from streams_rt.protocol import TaskId
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.http_auth import HttpAccess
from streams_rt.topology.serdes import Serde, Serdes

_SERDES: dict[str, Serde[Any]] = {"string": Serdes.string(), "int32": Serdes.int32(), "int64": Serdes.int64(),
                                  "json": Serdes.json(), "bytes": Serdes.bytes()}


class QueryError(Exception):
    """A host refused: `status` and `code` as it answered (see docs/iq.md), `body` the whole answer;
    `retry_after_s` for the ones that may succeed later (503)."""

    def __init__(self, status: int, body: dict[str, Any], retry_after_s: float | None = None) -> None:
        self.status, self.body, self.retry_after_s = status, body, retry_after_s
        self.code = str(body.get("error", "HTTP_ERROR"))
        super().__init__(f"{status} {self.code}: {body.get('message', '')}")


@dataclass(frozen=True)
class Answer:
    value: Any
    freshness: dict[str, Any]
    served_by: str
    body: dict[str, Any]


class KeyText(str):
    """A key already written as the text the endpoint reads (the command line's), used as it is."""


def key_text(serde_name: str, key: Any) -> str:
    """A key as the text the endpoint reads for a store with this key serde."""
    if isinstance(key, KeyText):
        return str(key)
    if serde_name == "bytes" and isinstance(key, (bytes, bytearray)):
        return encode_base64url(bytes(key))
    if serde_name == "json":
        return json.dumps(key, separators=(",", ":"))
    return str(key)


def key_path(serde_name: str, key: Any) -> str:
    """`key_text`, %-encoded for a URL path."""
    return urllib.parse.quote(key_text(serde_name, key), safe="")


class Client:
    def __init__(self, bootstrap_url: str, timeout_s: float = 10.0, *, secret: SharedSecret | None = None,
                 truststore: Path | None = None) -> None:
        self._bootstrap = bootstrap_url.rstrip("/")
        chosen = secret if secret is not None else SharedSecret.from_environment()
        self._access = HttpAccess.of_url(self._bootstrap, chosen, truststore)
        self._http = httpx.Client(timeout=timeout_s, headers=self._access.headers(), verify=self._access.verify())
        self._metadata: dict[str, Any] | None = None

    # -- metadata --------------------------------------------------------------------------------
    def metadata(self, refresh: bool = False) -> dict[str, Any]:
        if self._metadata is None or refresh:
            known = (self._metadata or {}).get("hosts", [])
            urls = [self._bootstrap] + [self._access.url(h["endpoint"]) for h in known]
            error: Exception | None = None
            for url in urls:
                try:
                    self._metadata = self._json(self._http.get(f"{url}/v1/metadata"))
                    break
                except httpx.TransportError as e:
                    error = e
            else:
                raise QueryError(503, {"error": "NO_HOST", "message": f"no host answered: {error}"})
        assert self._metadata is not None
        return self._metadata

    def store(self, name: str) -> dict[str, Any]:
        for store in self.metadata()["stores"]:
            if store["name"] == name:
                return dict(store)
        raise QueryError(404, {"error": "UNKNOWN_STORE", "message": f"no store {name!r}"})

    def owner(self, store: str, key: Any) -> str:
        """host:port of the key's active host (its task's, from the metadata)."""
        info = self.store(store)
        serde = _SERDES.get(info["key_serde"])
        if serde is None:  # a serde this client does not know: any host redirects
            return self._bootstrap.split("://", 1)[-1]
        data = key_bytes(serde, key_text(info["key_serde"], key))
        task = str(TaskId(info["subtopology"], partition_for(data, info["partitions"])))
        for host in self.metadata()["hosts"]:
            if task in host["active_tasks"]:
                return str(host["endpoint"])
        raise QueryError(503, {"error": "NOT_AVAILABLE", "message": f"task {task} has no active host now"}, 1.0)

    # -- reads -----------------------------------------------------------------------------------
    def get(self, store: str, key: Any, *, max_lag: int | None = None, at_batch: int | None = None) -> Answer:
        """A point lookup; QueryError(404, KEY_NOT_FOUND) when the store holds no such key."""
        info = self.store(store)
        path = f"/v1/stores/{store}/keys/{key_path(info['key_serde'], key)}"
        body = self._routed(store, key, path, _params(max_lag=max_lag, at_batch=at_batch))
        return Answer(body["value"], body["freshness"], body["served_by"], body)

    def windows(self, store: str, key: Any, time_from: int = 0, time_to: int | None = None, *,
                max_lag: int | None = None, at_batch: int | None = None) -> Answer:
        info = self.store(store)
        path = f"/v1/stores/{store}/windows/{key_path(info['key_serde'], key)}"
        params = _params(max_lag=max_lag, at_batch=at_batch, **{"from": time_from, "to": time_to})
        body = self._routed(store, key, path, params)
        return Answer(body["windows"], body["freshness"], body["served_by"], body)

    def range(self, store: str, lower: Any, upper: Any, *, page_size: int = 500,
              at_batch: int | None = None) -> Iterator[tuple[Any, Any]]:
        """Every (key, value) with lower <= key <= upper, from every host, in the store's key order."""
        info = self.store(store)
        params = {"from": key_text(info["key_serde"], lower), "to": key_text(info["key_serde"], upper)}
        return self._scatter(store, "range", _params(at_batch=at_batch, limit=page_size, **params))

    def all(self, store: str, *, page_size: int = 500, at_batch: int | None = None) -> Iterator[tuple[Any, Any]]:
        return self._scatter(store, "all", _params(at_batch=at_batch, limit=page_size))

    def _scatter(self, store: str, kind: str, params: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
        info = self.store(store)
        serde = _SERDES.get(info["key_serde"])
        hosts = [h["endpoint"] for h in self.metadata()["hosts"]
                 if any(TaskId.parse(t).subtopology == info["subtopology"] for t in h["active_tasks"])]

        def pages(host: str) -> Iterator[tuple[bytes, Any, Any]]:
            cursor = None
            while True:
                body = self._json(self._http.get(f"{self._access.url(host)}/v1/stores/{store}/{kind}",
                                                 params={**params, **_params(cursor=cursor)}))
                for entry in body["entries"]:
                    text = key_text(info["key_serde"], entry["key"])
                    order = key_bytes(serde, text) if serde is not None else text.encode()
                    yield order, entry["key"], entry["value"]
                cursor = body["next_cursor"]
                if cursor is None:
                    return

        for _, key, value in heapq.merge(*(pages(h) for h in hosts), key=lambda row: row[0]):
            yield key, value

    def _routed(self, store: str, key: Any, path: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the key's owner; a 307 or a host that does not answer means the metadata moved on:
        refresh it and ask once more (a second 307 is followed)."""
        for attempt in range(2):
            host = self.owner(store, key)
            try:
                answer = self._http.get(f"{self._access.url(host)}{path}", params=params)
            except httpx.TransportError:
                if attempt:
                    raise
                self.metadata(refresh=True)
                continue
            if answer.status_code == 307:
                self.metadata(refresh=True)
                answer = self._http.get(answer.headers["location"])
            return self._json(answer)
        raise AssertionError("unreachable")

    @staticmethod
    def _json(answer: httpx.Response) -> dict[str, Any]:
        try:
            body = answer.json()
        except ValueError:
            body = {"error": "NOT_JSON", "message": answer.text[:200]}
        if answer.status_code != 200:
            retry = answer.headers.get("retry-after")
            raise QueryError(answer.status_code, body, float(retry) if retry else None)
        return dict(body)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _params(**given: Any) -> dict[str, Any]:
    return {k: v for k, v in given.items() if v is not None}
