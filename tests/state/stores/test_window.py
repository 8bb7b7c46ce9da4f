"""Window store on real RocksDB: fetch by key and time range, fetch all, retention."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Message

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


def test_fetch_cost_follows_segments_not_the_requested_range(windows: WindowStore) -> None:
    for minute in (1, 5, 9):
        windows.put(b"k", b"%d" % minute, minute * MINUTE)
    windows.commit()
    windows.put(b"k", b"pending", 7 * MINUTE)
    expected = [(MINUTE, b"1"), (5 * MINUTE, b"5"), (7 * MINUTE, b"pending"), (9 * MINUTE, b"9")]
    # A loop over every segment id in the range would take hours for these bounds.
    assert windows.fetch(b"k", 0, 2**63 - 1) == expected
    assert windows.fetch(b"k", 0, 10**14) == expected
    assert windows.fetch(b"k", 5 * MINUTE, 10**14) == expected[1:]
    assert windows.fetch_all(6 * MINUTE, 2**63 - 1) == [(b"k", 7 * MINUTE, b"pending"), (b"k", 9 * MINUTE, b"9")]


def test_changelog_records_of_expired_segments_are_skipped(windows: WindowStore) -> None:
    created: list[int] = []
    make_segment = windows._segment

    def recording_segment(segment_id: int) -> object:
        created.append(segment_id)
        return make_segment(segment_id)

    windows._segment = recording_segment  # type: ignore[method-assign]
    starts = [29, 0, 17, 19, 25]  # minutes; after 29, retention 10 leaves windows after 19 live
    windows.apply_changelog([
        Message(topic="t", partition=0, offset=i, key=window_key(b"k", m * MINUTE), value=b"%d" % m)
        for i, m in enumerate(starts)
    ])
    # Segments are 2 minutes: 0 and 8 (16-18 min) had expired when their records came, so no
    # column family was made for them; 9 (18-20 min) still holds live time. The result is that of
    # applying everything, then expiring.
    assert sorted(set(created)) == [9, 12, 14]
    assert windows.fetch(b"k", 0, 10**12) == [(25 * MINUTE, b"25"), (29 * MINUTE, b"29")]
    assert sorted(windows._segments) == [9, 12, 14]
    assert [start for _, start, _ in _all_on_disk(windows)] == [19 * MINUTE, 25 * MINUTE, 29 * MINUTE]
