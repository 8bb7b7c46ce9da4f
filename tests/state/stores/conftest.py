"""Store fixtures: every store on real RocksDB in a temp dir and in memory (the same interface,
the same tests), with a recording changelog sink."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streams_rt.state.stores import (
    InMemoryKeyValueStore,
    InMemoryWindowStore,
    KeyValueStore,
    RocksDBKeyValueStore,
    RocksDBWindowStore,
    WindowStore,
)

MINUTE = 60_000


class RecordingChangelog:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []

    def __call__(self, key: bytes, value: bytes | None) -> None:
        self.records.append((key, value))


@pytest.fixture
def changelog() -> RecordingChangelog:
    return RecordingChangelog()


@pytest.fixture(params=["rocksdb", "memory"])
def kv(request: pytest.FixtureRequest, tmp_path: Path, changelog: RecordingChangelog) -> Iterator[KeyValueStore]:
    store: KeyValueStore = (RocksDBKeyValueStore("kv", tmp_path) if request.param == "rocksdb"
                            else InMemoryKeyValueStore("kv"))
    store.open()
    store.attach_changelog(changelog)
    yield store
    store.close()


@pytest.fixture(params=["rocksdb", "memory"])
def windows(request: pytest.FixtureRequest, tmp_path: Path, changelog: RecordingChangelog) -> Iterator[WindowStore]:
    shape: dict[str, Any] = {"retention_ms": 10 * MINUTE, "window_size_ms": MINUTE, "segment_interval_ms": 2 * MINUTE}
    store: WindowStore = (RocksDBWindowStore("win", tmp_path, **shape) if request.param == "rocksdb"
                          else InMemoryWindowStore("win", **shape))
    store.open()
    store.attach_changelog(changelog)
    yield store
    store.close()
