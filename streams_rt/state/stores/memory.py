"""In-memory stores behind the same interfaces as the RocksDB ones (as Quix Streams' backends share
theirs): topology and processor tests run without a broker or a disk, and a store that needs no
persistence between restarts can live in memory (its changelog still restores it)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from sortedcontainers import SortedDict

from streams_rt.protocol.wire import INT64_MAX
from streams_rt.state.errors import StoreClosedError
from streams_rt.state.stores.kv import KeyValueStore
from streams_rt.state.stores.window import TS_BYTES, SegmentWrite, WindowStore, window_key


class _InMemory:
    """Committed data in a sorted dict, and the applied changelog offset."""

    name: str
    _pending: dict[bytes, bytes | None]

    def __init__(self) -> None:
        self._data: SortedDict[bytes, bytes] | None = None
        self._offset: int | None = None

    def open(self) -> None:
        if self._data is None:
            self._data = SortedDict()

    def close(self) -> None:
        """Memory keeps nothing across a close: like a restart, the changelog restores it."""
        self._pending = {}
        self._data = None
        self._offset = None

    def wipe(self) -> None:
        reopen = self._data is not None
        self.close()
        if reopen:
            self.open()

    @property
    def is_open(self) -> bool:
        return self._data is not None

    @property
    def data(self) -> SortedDict[bytes, bytes]:
        if self._data is None:
            raise StoreClosedError(f"store {self.name} is closed")
        return self._data

    def is_empty(self) -> bool:
        return not self.data

    def applied_offset(self) -> int | None:
        return self._offset

    def _apply(self, entries: Iterable[tuple[bytes, bytes | None]], offset: int | None) -> None:
        data = self.data
        for key, value in entries:
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        if offset is not None:
            self._offset = offset


class InMemoryKeyValueStore(_InMemory, KeyValueStore):
    def __init__(self, name: str) -> None:
        KeyValueStore.__init__(self, name)
        _InMemory.__init__(self)

    def _committed_get(self, key: bytes) -> bytes | None:
        value: bytes | None = self.data.get(key)
        return value

    def _committed_range(self, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        data = self.data
        keys = list(data.irange(start, end, inclusive=(True, False)))  # a snapshot: writes may follow
        return ((key, value) for key in keys if (value := data.get(key)) is not None)

    def _committed_estimate(self) -> int:
        return len(self.data)

    def _commit_pending(self, pending: dict[bytes, bytes | None], changelog_offset: int | None) -> None:
        self._apply(pending.items(), changelog_offset)

    def apply_changelog(self, keys: Sequence[bytes], values: Sequence[bytes | None], last_offset: int) -> None:
        self._apply(zip(keys, values, strict=True), last_offset)


class InMemoryWindowStore(_InMemory, WindowStore):
    """Composite keys in one sorted dict, with the segment of each window kept beside it so that
    retention drops whole segments, as the RocksDB store does."""

    def __init__(self, name: str, retention_ms: int, window_size_ms: int,
                 segment_interval_ms: int | None = None, retain_duplicates: bool = False,
                 sessions: bool = False) -> None:
        WindowStore.__init__(self, name, retention_ms, window_size_ms, segment_interval_ms, retain_duplicates,
                             sessions)
        _InMemory.__init__(self)
        self._segments: dict[int, set[bytes]] = {}

    def close(self) -> None:
        _InMemory.close(self)
        self._segments = {}
        self.stream_time = -1

    @property
    def segment_ids(self) -> list[int]:
        return sorted(s for s, members in self._segments.items() if members)

    def _committed_fetch(self, key: bytes, lower: int, upper: int) -> Iterable[tuple[bytes, bytes]]:
        data = self.data
        width = len(key) + TS_BYTES + self.suffix_bytes
        end = window_key(key, upper + 1) if upper < INT64_MAX else None
        for composite in list(data.irange(window_key(key, lower), end, inclusive=(True, False))):
            if len(composite) == width and composite.startswith(key):
                yield composite, data[composite]

    def _committed_windows(self, lower: int, upper: int) -> Iterable[tuple[bytes, bytes]]:
        return list(self.data.items())

    def _store_windows(self, writes: Sequence[SegmentWrite], changelog_offset: int | None, logged: bool) -> None:
        for composite, value, segment_id in writes:
            members = self._segments.setdefault(segment_id, set())
            if value is None:
                members.discard(composite)
            else:
                members.add(composite)
        self._apply(((composite, value) for composite, value, _ in writes), changelog_offset)

    def _drop_segments_before(self, segment_id: int) -> None:
        for expired in [s for s in self._segments if s < segment_id]:
            for composite in self._segments.pop(expired):
                self.data.pop(composite, None)
