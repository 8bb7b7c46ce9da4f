"""Store fixtures: stores on real RocksDB in a temp dir, with a recording changelog sink."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streams_rt.state.stores.kv import KeyValueStore


class RecordingChangelog:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []

    def __call__(self, key: bytes, value: bytes | None) -> None:
        self.records.append((key, value))


@pytest.fixture
def changelog() -> RecordingChangelog:
    return RecordingChangelog()


@pytest.fixture
def kv(tmp_path: Path, changelog: RecordingChangelog) -> Iterator[KeyValueStore]:
    store = KeyValueStore("kv", tmp_path)
    store.open()
    store.attach_changelog(changelog)
    yield store
    store.close()
