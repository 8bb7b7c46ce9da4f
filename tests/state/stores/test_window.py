"""Window stores, on real RocksDB and in memory: fetch by key and time range, fetch all, retention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams_rt.state.stores import InMemoryWindowStore, RocksDBWindowStore, WindowStore
from streams_rt.state.stores.window import window_key
from tests.state.stores.conftest import MINUTE, RecordingChangelog


def test_fetch_by_key_and_time(windows: WindowStore, changelog: RecordingChangelog) -> None:
    for minute in range(5):
        windows.put(b"k", b"k%d" % minute, minute * MINUTE)
        windows.put(b"k\x00", b"other%d" % minute, minute * MINUTE)  # a key that extends b"k"
    windows.put(b"j", b"j", 2 * MINUTE)
    assert windows.fetch(b"k", MINUTE, 3 * MINUTE) == [(MINUTE, b"k1"), (2 * MINUTE, b"k2"), (3 * MINUTE, b"k3")]
    windows.commit(None)
    assert windows.fetch(b"k", MINUTE, 3 * MINUTE) == [(MINUTE, b"k1"), (2 * MINUTE, b"k2"), (3 * MINUTE, b"k3")]
    windows.put(b"k", None, 2 * MINUTE)
    windows.put(b"k", b"new", 3 * MINUTE)
    assert windows.fetch(b"k", MINUTE, 3 * MINUTE) == [(MINUTE, b"k1"), (3 * MINUTE, b"new")]
    assert windows.fetch_all(2 * MINUTE, 2 * MINUTE) == [(b"j", 2 * MINUTE, b"j"), (b"k\x00", 2 * MINUTE, b"other2")]
    assert changelog.records[0] == (window_key(b"k", 0), b"k0")
    assert (window_key(b"k", 2 * MINUTE), None) in changelog.records


def test_retention_drops_expired_windows(tmp_path: Path, changelog: RecordingChangelog) -> None:
    windows = RocksDBWindowStore("win", tmp_path, retention_ms=10 * MINUTE, window_size_ms=MINUTE,
                                 segment_interval_ms=2 * MINUTE)
    windows.open()
    windows.attach_changelog(changelog)
    for minute in range(0, 30):
        windows.put(b"k", b"%d" % minute, minute * MINUTE)
        if minute % 4 == 3:
            windows.commit(None)
    windows.commit(None)
    # stream time 29 min, retention 10 min: windows starting at or before 19 min are expired.
    assert [start // MINUTE for start, _ in windows.fetch(b"k", 0, 10**9)] == list(range(20, 30))
    assert min(windows.segment_ids) >= 9  # segments [0, 18) min dropped as whole column families
    windows.put(b"k", b"late", 5 * MINUTE)  # a write to an expired window is dropped and counted
    assert windows.dropped_expired == 1
    windows.commit(None)
    windows.close()
    windows.open()
    assert windows.fetch(b"k", 0, 25 * MINUTE)[0] == (20 * MINUTE, b"20")
    assert len(windows.fetch_all()) == 10
    assert min(start for _, start, _ in _all_on_disk(windows)) >= 18 * MINUTE
    windows.close()


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


def test_fetch_cost_follows_segments_not_the_requested_range(windows: WindowStore) -> None:
    for minute in (1, 5, 9):
        windows.put(b"k", b"%d" % minute, minute * MINUTE)
    windows.commit(None)
    windows.put(b"k", b"pending", 7 * MINUTE)
    expected = [(MINUTE, b"1"), (5 * MINUTE, b"5"), (7 * MINUTE, b"pending"), (9 * MINUTE, b"9")]
    # A loop over every segment id in the range would take hours for these bounds.
    assert windows.fetch(b"k", 0, 2**63 - 1) == expected
    assert windows.fetch(b"k", 0, 10**14) == expected
    assert windows.fetch(b"k", 5 * MINUTE, 10**14) == expected[1:]
    assert windows.fetch_all(6 * MINUTE, 2**63 - 1) == [(b"k", 7 * MINUTE, b"pending"), (b"k", 9 * MINUTE, b"9")]


def test_changelog_records_of_expired_segments_are_skipped(windows: WindowStore) -> None:
    starts = [29, 0, 17, 19, 25]  # minutes; after 29, retention 10 leaves windows after 19 live
    windows.apply_changelog([window_key(b"k", m * MINUTE) for m in starts], [b"%d" % m for m in starts], 4)
    # Segments are 2 minutes: 0 and 8 (16-18 min) had expired when their records came; 9 (18-20
    # min) still holds live time. The result is that of applying everything, then expiring.
    assert windows.fetch(b"k", 0, 10**12) == [(25 * MINUTE, b"25"), (29 * MINUTE, b"29")]
    assert windows.segment_ids == [9, 12, 14] and windows.applied_offset() == 4
    assert [start for _, start, _ in _all_on_disk(windows)] == [19 * MINUTE, 25 * MINUTE, 29 * MINUTE]


def _shaped(kind: str, tmp_path: Path, name: str, **layout: bool) -> WindowStore:
    shape: dict[str, Any] = {"retention_ms": 10 * MINUTE, "window_size_ms": 0, "segment_interval_ms": 2 * MINUTE,
                             **layout}
    store: WindowStore = (RocksDBWindowStore(name, tmp_path, **shape) if kind == "rocksdb"
                          else InMemoryWindowStore(name, **shape))
    store.open()
    return store


@pytest.mark.parametrize("kind", ["rocksdb", "memory"])
@pytest.mark.parametrize("layout", [{"retain_duplicates": True}, {"sessions": True}])
def test_duplicate_and_session_layouts_restore_from_their_changelog(tmp_path: Path, kind: str,
                                                                      layout: dict[str, bool]) -> None:
    """A stream-stream join's store keeps every put at one time, in put order (a None is ignored);
    a session store keeps each session under its end and start. Replaying the changelog (restore,
    standby) into a fresh store gives the same entries."""
    changelog = RecordingChangelog()
    store = _shaped(kind, tmp_path / "a", "first", **layout)
    store.attach_changelog(changelog)
    if layout.get("retain_duplicates"):
        for value in (b"x", b"y", None, b"x"):
            store.put(b"k", value, MINUTE)
        expected = [(MINUTE, b"x"), (MINUTE, b"y"), (MINUTE, b"x")]
    else:
        store.put(b"k", b"s1", MINUTE, (0).to_bytes(8, "big"))
        store.put(b"k", b"s2", MINUTE, (30_000).to_bytes(8, "big"))
        store.put(b"k", None, MINUTE, (0).to_bytes(8, "big"))
        expected = [(MINUTE, b"s2")]
        with pytest.raises(ValueError, match="suffix of 8 bytes"):
            store.put(b"k", b"no start", MINUTE)
    assert store.fetch(b"k", 0, 2 * MINUTE) == expected
    store.commit(None)
    assert store.fetch_committed(b"k", 0, 2 * MINUTE) == expected
    replica = _shaped(kind, tmp_path / "b", "replica", **layout)
    replica.apply_changelog([k for k, _ in changelog.records], [v for _, v in changelog.records], 7)
    assert replica.fetch_committed_entries(b"k", 0, 2 * MINUTE) == store.fetch_committed_entries(b"k", 0, 2 * MINUTE)
    store.close()
    replica.close()
