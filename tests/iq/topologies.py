"""The topology the query tests run (hosts import it by 'module:attr'): page views keyed by page,
counted three ways so that every kind of store and key serde is queried: a key-value store with
string keys, a window store, and a key-value store with int64 keys behind a repartition topic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from streams_rt.topology import Serdes, StreamsBuilder, Topology, TumblingWindows

S, I64 = Serdes.string(), Serdes.int64()
WINDOWS = TumblingWindows(60_000, grace_ms=3_600_000)


def page_views(suffix: str = "") -> Topology:
    b = StreamsBuilder()
    views = b.stream(f"iq-views{suffix}", S, S)  # key: page, value: user
    views.group_by_key().count("page-counts")
    views.group_by_key().windowed_by(WINDOWS).count("page-windows", retention_ms=10 * 365 * 86_400_000)
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
