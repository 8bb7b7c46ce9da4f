"""The topology the query tests run (hosts import it by 'module:attr'): page views keyed by page,
counted four ways so that every kind of store and key serde is queried: a key-value store with
string keys, a window store, a session store, and a key-value store with int64 keys behind a
repartition topic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from streams_rt.topology import Serdes, SessionWindows, StreamsBuilder, Topology, TumblingWindows

S, I64 = Serdes.string(), Serdes.int64()
WINDOWS = TumblingWindows(60_000, grace_ms=3_600_000)
SESSIONS = SessionWindows(2_000, grace_ms=3_600_000)  # grace: the views come out of order


def page_views(suffix: str = "") -> Topology:
    b = StreamsBuilder()
    views = b.stream(f"iq-views{suffix}", S, S)  # key: page, value: user
    views.group_by_key().count("page-counts")
    views.group_by_key().windowed_by(WINDOWS).count("page-windows", retention_ms=10 * 365 * 86_400_000)
    views.group_by_key().windowed_by(SESSIONS).count("page-sessions", retention_ms=10 * 365 * 86_400_000)
    views.group_by(lambda page, user: len(page), I64, name="lengths").count("by-length")
    return b.build()


def references(views: Iterable[tuple[str, int]]) -> tuple[Counter[str], Counter[tuple[str, int]], Counter[int]]:
    """(views per page, per page and minute window start, per page-name length)."""
    pages, windows, lengths = Counter[str](), Counter[tuple[str, int]](), Counter[int]()
    for page, ts in views:
        pages[page] += 1
        windows[(page, ts - ts % 60_000)] += 1
        lengths[len(page)] += 1
    return pages, windows, lengths


def table(suffix: str = "") -> Topology:
    """A topic materialised as a queryable table (large ones restore for long enough to be watched)."""
    b = StreamsBuilder()
    b.table(f"iq-table{suffix}", S, S, store="table")
    return b.build()


def session_references(views: Iterable[tuple[str, int]]) -> dict[str, list[tuple[int, int, int]]]:
    """Per page, its sessions (start, end, views): views at most the gap apart share one (as they
    would arrive in any order, none being later than grace)."""
    times: dict[str, list[int]] = {}
    for page, ts in views:
        times.setdefault(page, []).append(ts)
    sessions: dict[str, list[tuple[int, int, int]]] = {}
    for page, found in times.items():
        found.sort()
        mine = sessions.setdefault(page, [])
        start, count = found[0], 0
        for previous, ts in zip([found[0], *found], found, strict=False):
            if ts - previous > SESSIONS.gap_ms:
                mine.append((start, previous, count))
                start, count = ts, 0
            count += 1
        mine.append((start, found[-1], count))
    return sessions
