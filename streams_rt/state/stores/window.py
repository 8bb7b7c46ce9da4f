"""Window stores: values per (key, time), expired entries dropped by retention. Three layouts share
the rules: a window store (time: the window start), a window store that retains duplicates (the
stream-stream join's: every put is kept, in put order), and a session store (time: the session end,
the start after it, as Kafka's session key schema).

Layout as Kafka's segmented window stores: time is cut into segments of `segment_interval_ms`; keys
are `<key><time, 8 bytes big-endian><suffix>`, so fetching a key over a time range is a range scan per
segment, and retention drops whole segments. The suffix is empty for a window store, a sequence
number for duplicates (8 bytes, rising in put order: Kafka's is 4 bytes and restarts at 0 on every
open, which can overwrite a restored duplicate; ours starts above any number used before), and the
session start for a session store. The changelog key is the same composite key. `WindowStore` holds
the rules every backend shares; `RocksDBWindowStore` keeps one column family per segment.
"""

from __future__ import annotations

import logging
import time
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
SUFFIX_BYTES = 8  # a duplicate's sequence number, or a session's start
_SEGMENT_PREFIX = "segment-"

# (composite key, value or None, segment id)
SegmentWrite = tuple[bytes, bytes | None, int]


def window_key(key: bytes, window_start: int) -> bytes:
    if not 0 <= window_start <= INT64_MAX:
        raise ValueError(f"window start must be a non-negative epoch-ms timestamp, got {window_start}")
    return key + window_start.to_bytes(TS_BYTES, "big")


def split_window_key(composite: bytes, suffix_bytes: int = 0) -> tuple[bytes, int]:
    """(key, time) of a composite key whose suffix is `suffix_bytes` long."""
    end = len(composite) - suffix_bytes
    return composite[:end - TS_BYTES], int.from_bytes(composite[end - TS_BYTES:end], "big")


def _sequence_seed() -> int:
    """Where a store's duplicate sequence numbers start: microseconds since the epoch, so numbers
    given after a restart (or a restore) lie above those given before it (a store takes far fewer
    than a million puts a second)."""
    return time.time_ns() // 1000


def default_segment_interval(retention_ms: int) -> int:
    """Kafka's default: half the retention, at least a minute."""
    return max(retention_ms // 2, 60_000)


class WindowStore(StateStore):
    """put at a time (a window start, or a session end); fetch one key over a time range; fetch all;
    retention by segment. `retain_duplicates`: every put is kept (a None value is ignored, as in
    Kafka); `sessions`: each entry also has a start (the suffix), given with the put."""

    def __init__(self, name: str, retention_ms: int, window_size_ms: int,
                 segment_interval_ms: int | None = None, retain_duplicates: bool = False,
                 sessions: bool = False) -> None:
        StateStore.__init__(self, name)  # not super(): a backend's own __init__ follows in the MRO
        if retention_ms < window_size_ms:
            raise ValueError(f"retention ({retention_ms} ms) must be at least the window size ({window_size_ms} ms)")
        if retain_duplicates and sessions:
            raise ValueError("a session store does not retain duplicates")
        self.retention_ms = retention_ms
        self.window_size_ms = window_size_ms
        self.segment_interval_ms = segment_interval_ms or default_segment_interval(retention_ms)
        self.retain_duplicates, self.sessions = retain_duplicates, sessions
        self.suffix_bytes = SUFFIX_BYTES if retain_duplicates or sessions else 0
        self._sequence = _sequence_seed()
        self.stream_time = -1  # the largest time put; retention counts back from it
        self.dropped_expired = 0

    def _time_of(self, composite: bytes) -> int:
        end = len(composite) - self.suffix_bytes
        return int.from_bytes(composite[end - TS_BYTES:end], "big")

    def _split(self, composite: bytes) -> tuple[bytes, int, bytes]:
        """(key, time, suffix) of a composite key."""
        end = len(composite) - self.suffix_bytes
        return composite[:end - TS_BYTES], int.from_bytes(composite[end - TS_BYTES:end], "big"), composite[end:]

    def _lowest_live(self) -> int:
        return max(0, self.stream_time - self.retention_ms + 1)

    # -- reads -------------------------------------------------------------------------------
    def fetch(self, key: bytes, time_from: int, time_to: int) -> list[tuple[int, bytes]]:
        """(time, value) for `key` with time_from <= time <= time_to, oldest first (duplicates in put
        order)."""
        return [(t, value) for t, _, value in self.fetch_entries(key, time_from, time_to)]

    def fetch_entries(self, key: bytes, time_from: int, time_to: int) -> list[tuple[int, bytes, bytes]]:
        """(time, suffix, value) for `key` with time_from <= time <= time_to, by time then suffix."""
        lower = max(time_from, self._lowest_live())
        if time_to < lower:
            return []
        width = len(key) + TS_BYTES + self.suffix_bytes
        found: dict[bytes, bytes | None] = dict(self._committed_fetch(key, lower, time_to))
        for composite, value in self._pending.items():
            if len(composite) == width and composite.startswith(key) and lower <= self._time_of(composite) <= time_to:
                found[composite] = value
        return [(t, suffix, value) for composite, value in sorted(found.items()) if value is not None
                for _, t, suffix in (self._split(composite),)]

    def fetch_committed(self, key: bytes, time_from: int, time_to: int) -> list[tuple[int, bytes]]:
        """`fetch` over committed entries only, without a batch's uncommitted writes (interactive
        queries read this)."""
        return [(t, value) for t, _, value in self.fetch_committed_entries(key, time_from, time_to)]

    def fetch_committed_entries(self, key: bytes, time_from: int, time_to: int) -> list[tuple[int, bytes, bytes]]:
        """`fetch_entries` over committed entries only."""
        lower = max(time_from, self._lowest_live())
        if time_to < lower:
            return []
        return [(t, suffix, value) for composite, value in self._committed_fetch(key, lower, time_to)
                for _, t, suffix in (self._split(composite),)]

    def fetch_all(self, time_from: int = 0, time_to: int = INT64_MAX) -> list[tuple[bytes, int, bytes]]:
        """(key, time, value) for every entry with time_from <= time <= time_to, ordered by time then
        key (then suffix)."""
        return [(key, t, value) for key, t, _, value in self.fetch_all_entries(time_from, time_to)]

    def fetch_all_entries(self, time_from: int = 0, time_to: int = INT64_MAX) -> list[tuple[bytes, int, bytes, bytes]]:
        """(key, time, suffix, value) for every entry with time_from <= time <= time_to, ordered by
        time, key, suffix."""
        lower = max(time_from, self._lowest_live())
        found: dict[bytes, bytes | None] = dict(self._committed_windows(lower, time_to))
        found.update(self._pending)
        rows = []
        for composite, value in found.items():
            key, t, suffix = self._split(composite)
            if value is not None and lower <= t <= time_to:
                rows.append((key, t, suffix, value))
        rows.sort(key=lambda row: (row[1], row[0], row[2]))
        return rows

    # -- writes ------------------------------------------------------------------------------
    def put(self, key: bytes, value: bytes | None, window_start: int, suffix: bytes = b"") -> None:
        """Write the entry of `key` at `window_start` (None deletes it; a session store's `suffix` is
        its start, 8 bytes big-endian; a store retaining duplicates adds one more entry and ignores
        None). Writes to entries already past retention are dropped, counted in `dropped_expired`
        and logged at commit (as Kafka)."""
        if self.retain_duplicates:
            if value is None:  # ignored, but its time counts (as Kafka's in-memory window store)
                self.stream_time = max(self.stream_time, window_start)
                return
            self._sequence += 1
            suffix = self._sequence.to_bytes(SUFFIX_BYTES, "big")
        elif len(suffix) != self.suffix_bytes:
            raise ValueError(f"store {self.name}: a suffix of {self.suffix_bytes} bytes is needed, got {len(suffix)}")
        composite = window_key(key, window_start) + suffix
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
            start = self._time_of(composite)
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
            start = self._time_of(composite)
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
    def _committed_fetch(self, key: bytes, lower: int, upper: int) -> Iterable[tuple[bytes, bytes]]:
        """Committed (composite key, value) of `key` with lower <= time <= upper, in key order."""

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
        retain_duplicates: bool = False,
        sessions: bool = False,
    ) -> None:
        RocksDBStore.__init__(self, name, task_dir, settings)
        WindowStore.__init__(self, name, retention_ms, window_size_ms, segment_interval_ms, retain_duplicates,
                             sessions)
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

    def _committed_fetch(self, key: bytes, lower: int, upper: int) -> Iterable[tuple[bytes, bytes]]:
        width = len(key) + TS_BYTES + self.suffix_bytes
        end = window_key(key, upper + 1) if upper < INT64_MAX else None
        for segment_id in self._segments_overlapping(lower, upper):
            segment = self._segments.get(segment_id)
            if segment is None:  # dropped by retention since (a reader on another thread): expired
                continue
            for composite, value in self._scan(segment[0], window_key(key, lower), end):
                if len(composite) == width and composite.startswith(key):
                    yield composite, value

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
