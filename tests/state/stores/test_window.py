"""Window store on real RocksDB: fetch by key and time range, fetch all, retention."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streams_rt.state.stores.window import WindowStore, window_key
from tests.state.stores.conftest import RecordingChangelog

MINUTE = 60_000


@pytest.fixture
def windows(tmp_path: Path, changelog: RecordingChangelog) -> Iterator[WindowStore]:
    store = WindowStore("win", tmp_path, retention_ms=10 * MINUTE, window_size_ms=MINUTE, segment_interval_ms=2 * MINUTE)
    store.open()
    store.attach_changelog(changelog)
    yield store
    store.close()


def test_fetch_by_key_and_time(windows: WindowStore, changelog: RecordingChangelog) -> None:
    for minute in range(5):
        windows.put(b"k", b"k%d" % minute, minute * MINUTE)
        windows.put(b"k\x00", b"other%d" % minute, minute * MINUTE)  # a key that extends b"k"
    windows.put(b"j", b"j", 2 * MINUTE)
    assert windows.fetch(b"k", MINUTE, 3 * MINUTE) == [(MINUTE, b"k1"), (2 * MINUTE, b"k2"), (3 * MINUTE, b"k3")]
    windows.commit()
    assert windows.fetch(b"k", MINUTE, 3 * MINUTE) == [(MINUTE, b"k1"), (2 * MINUTE, b"k2"), (3 * MINUTE, b"k3")]
    windows.put(b"k", None, 2 * MINUTE)
    windows.put(b"k", b"new", 3 * MINUTE)
    assert windows.fetch(b"k", MINUTE, 3 * MINUTE) == [(MINUTE, b"k1"), (3 * MINUTE, b"new")]
    assert windows.fetch_all(2 * MINUTE, 2 * MINUTE) == [(b"j", 2 * MINUTE, b"j"), (b"k\x00", 2 * MINUTE, b"other2")]
    assert changelog.records[0] == (window_key(b"k", 0), b"k0")
    assert (window_key(b"k", 2 * MINUTE), None) in changelog.records


def test_retention_drops_expired_windows(windows: WindowStore) -> None:
    for minute in range(0, 30):
        windows.put(b"k", b"%d" % minute, minute * MINUTE)
        if minute % 4 == 3:
            windows.commit()
    windows.commit()
    # stream time 29 min, retention 10 min: windows starting at or before 19 min are expired.
    assert [start // MINUTE for start, _ in windows.fetch(b"k", 0, 10**9)] == list(range(20, 30))
    assert min(windows._segments) >= 9  # segments [0, 18) min dropped as whole column families
    windows.put(b"k", b"late", 5 * MINUTE)  # a write to an expired window is dropped and counted
    assert windows.dropped_expired == 1
    windows.commit()
    windows.close()
    windows.open()
    assert windows.fetch(b"k", 0, 25 * MINUTE)[0] == (20 * MINUTE, b"20")
    assert len(windows.fetch_all()) == 10
    assert min(start for _, start, _ in _all_on_disk(windows)) >= 18 * MINUTE


def _all_on_disk(windows: WindowStore) -> list[tuple[bytes, int, bytes]]:
    saved = windows.stream_time
    windows.stream_time = -1  # look past the retention filter: what is physically left?
    try:
        return windows.fetch_all()
    finally:
        windows.stream_time = saved


def test_rejects_negative_window_start(windows: WindowStore) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        windows.put(b"k", b"v", -1)
