"""Timestamped window stores: values per (key, window start), expired windows dropped by retention.

Layout as Kafka's segmented window stores: time is cut into segments of `segment_interval_ms`; keys
are `<key><window start, 8 bytes big-endian>`, so fetching a key over a time range is a range scan per
segment, and retention drops whole segments. The changelog key is the same composite key (Kafka's
also carries a sequence number for duplicates, which no DSL operator here needs). `WindowStore`
holds the rules every backend shares; `RocksDBWindowStore` keeps one column family per segment.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path

import rocksdict

from streams_rt.protocol.wire import INT64_MAX
from streams_rt.state.stores.base import StateStore
from streams_rt.state.stores.rocksdb import OFFSETS_FAMILY, RocksDBStore
from streams_rt.state.stores.rocksdb_options import DEFAULT_SETTINGS, RocksDBSettings

log = logging.getLogger(__name__)

TS_BYTES = 8
_SEGMENT_PREFIX = "segment-"

# (composite key, value or None, segment id)
SegmentWrite = tuple[bytes, bytes | None, int]


def window_key(key: bytes, window_start: int) -> bytes:
    if not 0 <= window_start <= INT64_MAX:
        raise ValueError(f"window start must be a non-negative epoch-ms timestamp, got {window_start}")
    return key + window_start.to_bytes(TS_BYTES, "big")


def split_window_key(composite: bytes) -> tuple[bytes, int]:
    return composite[:-TS_BYTES], int.from_bytes(composite[-TS_BYTES:], "big")


def default_segment_interval(retention_ms: int) -> int:
    """Kafka's default: half the retention, at least a minute."""
    return max(retention_ms // 2, 60_000)


class WindowStore(StateStore):
    """put at a window start; fetch one key over a time range; fetch all; retention by segment."""

    def __init__(self, name: str, retention_ms: int, window_size_ms: int,
                 segment_interval_ms: int | None = None) -> None:
        StateStore.__init__(self, name)  # not super(): a backend's own __init__ follows in the MRO
        if retention_ms < window_size_ms:
            raise ValueError(f"retention ({retention_ms} ms) must be at least the window size ({window_size_ms} ms)")
        self.retention_ms = retention_ms
        self.window_size_ms = window_size_ms
        self.segment_interval_ms = segment_interval_ms or default_segment_interval(retention_ms)
        self.stream_time = -1  # the largest window start seen; retention counts back from it
        self.dropped_expired = 0

    def _lowest_live(self) -> int:
        return max(0, self.stream_time - self.retention_ms + 1)

    # -- reads -------------------------------------------------------------------------------
    def fetch(self, key: bytes, time_from: int, time_to: int) -> list[tuple[int, bytes]]:
        """(window start, value) for `key` with time_from <= start <= time_to, oldest first."""
        lower = max(time_from, self._lowest_live())
        if time_to < lower:
            return []
        found: dict[int, bytes | None] = dict(self._committed_fetch(key, lower, time_to))
        width = len(key) + TS_BYTES
        for composite, value in self._pending.items():
            if len(composite) == width and composite.startswith(key):
                start = int.from_bytes(composite[-TS_BYTES:], "big")
                if lower <= start <= time_to:
                    found[start] = value
        return [(start, value) for start, value in sorted(found.items()) if value is not None]

    def fetch_committed(self, key: bytes, time_from: int, time_to: int) -> list[tuple[int, bytes]]:
        """`fetch` over committed windows only, without a batch's uncommitted writes (interactive
        queries read this)."""
        lower = max(time_from, self._lowest_live())
        return [] if time_to < lower else list(self._committed_fetch(key, lower, time_to))

    def fetch_all(self, time_from: int = 0, time_to: int = INT64_MAX) -> list[tuple[bytes, int, bytes]]:
        """(key, window start, value) for every window with time_from <= start <= time_to, ordered
        by window start then key."""
        lower = max(time_from, self._lowest_live())
        found: dict[bytes, bytes | None] = dict(self._committed_windows(lower, time_to))
        found.update(self._pending)
        rows = []
        for composite, value in found.items():
            key, start = split_window_key(composite)
            if value is not None and lower <= start <= time_to:
                rows.append((key, start, value))
        rows.sort(key=lambda row: (row[1], row[0]))
        return rows

    # -- writes ------------------------------------------------------------------------------
    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        """Write the window starting at `window_start` (None deletes it). Writes to windows already
        past retention are dropped, counted in `dropped_expired` and logged at commit (as Kafka)."""
        composite = window_key(key, window_start)
        if window_start < self._lowest_live():
            self.dropped_expired += 1
            return
        self.stream_time = max(self.stream_time, window_start)
        self._write(composite, value)

    def _commit_pending(self, pending: dict[bytes, bytes | None], changelog_offset: int | None) -> None:
        lowest = self._lowest_live()
        interval = self.segment_interval_ms
        writes = []
        for composite, value in pending.items():
            start = int.from_bytes(composite[-TS_BYTES:], "big")
            if start >= lowest:  # else expired since it was written: its segment is dropped below
                writes.append((composite, value, start // interval))
        self._store_windows(writes, changelog_offset, logged=True)
        if self.dropped_expired:
            log.warning("store %s: dropped %d writes to expired windows", self.name, self.dropped_expired)
            self.dropped_expired = 0
        self._drop_segments_before(lowest // interval)

    def apply_changelog(self, keys: Sequence[bytes], values: Sequence[bytes | None], last_offset: int) -> None:
        """Records whose segment has expired by then (stream time rising record by record, as
        Kafka's restore) are skipped rather than written to a segment dropped right after: the
        result is that of applying everything, then expiring."""
        interval, retention = self.segment_interval_ms, self.retention_ms
        newest = self.stream_time
        writes: list[SegmentWrite] = []
        for composite, value in zip(keys, values, strict=True):
            start = int.from_bytes(composite[-TS_BYTES:], "big")
            newest = max(newest, start)
            segment_id = start // interval
            if (segment_id + 1) * interval > newest - retention + 1:
                writes.append((composite, value, segment_id))
        self._store_windows(writes, last_offset, logged=False)
        self.stream_time = newest
        if len(writes) < len(keys):
            log.debug("store %s: skipped %d changelog records of expired segments", self.name, len(keys) - len(writes))
        self._drop_segments_before(self._lowest_live() // interval)

    # -- backend -----------------------------------------------------------------------------
    @property
    @abstractmethod
    def segment_ids(self) -> list[int]:
        """The segments holding committed windows, oldest first."""

    @abstractmethod
    def _committed_fetch(self, key: bytes, lower: int, upper: int) -> Iterable[tuple[int, bytes]]:
        """Committed (window start, value) of `key` with lower <= start <= upper."""

    @abstractmethod
    def _committed_windows(self, lower: int, upper: int) -> Iterable[tuple[bytes, bytes]]:
        """Committed (composite key, value) of the segments overlapping [lower, upper]."""

    @abstractmethod
    def _store_windows(self, writes: Sequence[SegmentWrite], changelog_offset: int | None, logged: bool) -> None:
        """Apply the writes and record the offset atomically; `logged`: a commit (durable at once)
        rather than changelog records (durable at `sync`)."""

    @abstractmethod
    def _drop_segments_before(self, segment_id: int) -> None:
        """Drop every segment older than `segment_id`: all its windows have expired."""


class RocksDBWindowStore(WindowStore, RocksDBStore):
    """One RocksDB column family per segment."""

    def __init__(
        self,
        name: str,
        task_dir: Path,
        retention_ms: int,
        window_size_ms: int,
        segment_interval_ms: int | None = None,
        settings: RocksDBSettings = DEFAULT_SETTINGS,
    ) -> None:
        RocksDBStore.__init__(self, name, task_dir, settings)
        WindowStore.__init__(self, name, retention_ms, window_size_ms, segment_interval_ms)
        self._segments: dict[int, tuple[rocksdict.Rdict, rocksdict.ColumnFamily]] = {}
        self._options: rocksdict.Options | None = None

    def _open_db(self, path: str, options: rocksdict.Options) -> rocksdict.Rdict:
        self._options = options
        # No CURRENT file: no database yet (an open creates it). Otherwise a failure to list the
        # column families is damage, which the caller reports.
        names = rocksdict.Rdict.list_cf(path, options) if (Path(path) / "CURRENT").exists() else []
        segments = [n for n in names if n.startswith(_SEGMENT_PREFIX)]
        families = {"default": options, OFFSETS_FAMILY: options, **{n: options for n in segments}}
        db = rocksdict.Rdict(path, options, column_families=families)
        self._segments = {}
        for name in segments:
            segment_id = int(name[len(_SEGMENT_PREFIX):])
            self._segments[segment_id] = (db.get_column_family(name), db.get_column_family_handle(name))
        if self._segments:
            # A lower bound of the stream time: the newest segment's start. Restore raises it.
            self.stream_time = max(self.stream_time, max(self._segments) * self.segment_interval_ms)
        return db

    def _data_families(self) -> list[str]:
        return ["default", *(f"{_SEGMENT_PREFIX}{segment_id}" for segment_id in self._segments)]

    def _family(self, name: str) -> rocksdict.Rdict:
        if name.startswith(_SEGMENT_PREFIX):
            return self._segments[int(name[len(_SEGMENT_PREFIX):])][0]
        return super()._family(name)

    @property
    def segment_ids(self) -> list[int]:
        return sorted(self._segments)

    def close(self) -> None:
        self._segments = {}
        super().close()

    def wipe(self) -> None:
        self.stream_time = -1
        super().wipe()

    def _segments_overlapping(self, lower: int, time_to: int) -> list[int]:
        """The ids of the existing segments overlapping [lower, time_to], oldest first: the cost
        follows the segments on disk, not the width of the requested range. (Ids, not column
        family views: see RocksDBStore's "checked reads".)"""
        interval = self.segment_interval_ms
        return [
            segment_id
            for segment_id in sorted(self._segments)
            if (segment_id + 1) * interval > lower and segment_id * interval <= time_to
        ]

    def _committed_fetch(self, key: bytes, lower: int, upper: int) -> Iterable[tuple[int, bytes]]:
        width = len(key) + TS_BYTES
        end = window_key(key, upper + 1) if upper < INT64_MAX else None
        for segment_id in self._segments_overlapping(lower, upper):
            segment = self._segments.get(segment_id)
            if segment is None:  # dropped by retention since (a reader on another thread): expired
                continue
            for composite, value in self._scan(segment[0], window_key(key, lower), end):
                if len(composite) == width and composite.startswith(key):
                    yield int.from_bytes(composite[-TS_BYTES:], "big"), value

    def _committed_windows(self, lower: int, upper: int) -> Iterable[tuple[bytes, bytes]]:
        for segment_id in self._segments_overlapping(lower, upper):
            yield from self._scan(self._segments[segment_id][0], None, None)

    def _segment(self, segment_id: int) -> rocksdict.ColumnFamily:
        segment = self._segments.get(segment_id)
        if segment is None:
            name = f"{_SEGMENT_PREFIX}{segment_id}"
            db = self.db
            assert self._options is not None  # set by _open_db, as the open db shows
            with self._typed_failures():
                cf = db.create_column_family(name, self._options)
            segment = (cf, db.get_column_family_handle(name))
            self._segments[segment_id] = segment
        return segment[1]

    def _store_windows(self, writes: Sequence[SegmentWrite], changelog_offset: int | None, logged: bool) -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        for composite, value, segment_id in writes:
            if value is None:
                batch.delete(composite, self._segment(segment_id))
            else:
                batch.put(composite, value, self._segment(segment_id))
        self._record_offset(batch, changelog_offset)
        (self._write_logged if logged else self._write_changelog_records)(batch)

    def _drop_segments_before(self, segment_id: int) -> None:
        for expired in [s for s in self._segments if s < segment_id]:
            del self._segments[expired]
            with self._typed_failures():
                self.db.drop_column_family(f"{_SEGMENT_PREFIX}{expired}")
            log.debug("store %s: dropped expired segment %d", self.name, expired)
