"""The shapes of the query endpoint's answers, for its OpenAPI document. Handlers write JSON
directly (validating every answer against these would cost more than the read itself); the tests
check real answers against the document."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Freshness(BaseModel):
    task: str
    standby: bool
    committed_batch: int | None
    lag: int | None


class Served(BaseModel):
    served_by: str
    generation: int


class PointAnswer(Served):
    store: str
    key: Any
    value: Any
    freshness: Freshness


class Entry(BaseModel):
    key: Any
    value: Any


class RangeAnswer(Served):
    store: str
    entries: list[Entry]
    next_cursor: str | None
    freshness: list[Freshness]


class Window(BaseModel):
    start: int
    end: int
    value: Any


class WindowAnswer(Served):
    store: str
    key: Any
    windows: list[Window]
    freshness: Freshness


class StoreDescription(BaseModel):
    name: str
    kind: str
    key_serde: str
    value_serde: str
    subtopology: int
    partitions: int
    window_size_ms: int | None


class StoreEntry(StoreDescription):
    """A store and its tasks held on the host that answers."""

    active_tasks: list[str]
    standby_tasks: list[str]


class StoresAnswer(Served):
    stores: list[StoreEntry]


class PartitionEntry(BaseModel):
    topic: str
    partition: int


class HostEntry(BaseModel):
    endpoint: str
    active_tasks: list[str]
    standby_tasks: list[str]
    active_partitions: list[PartitionEntry]
    standby_partitions: list[PartitionEntry]


class MetadataAnswer(Served):
    hosts: list[HostEntry]
    stores: list[StoreDescription]


class KeyMetadataAnswer(Served):
    store: str
    key: Any
    task: str
    partition: int
    active: str | None
    standbys: list[str]


class ErrorAnswer(BaseModel):
    """Every refusal; 503s also carry a Retry-After header, and restoring ones their progress."""

    error: str
    message: str
