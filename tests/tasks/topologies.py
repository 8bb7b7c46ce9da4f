"""Topologies the host tests run (hosts import them by 'module:attr' and call them with the test's
topic suffix, as a real application's hosts import its code and configure it), and references
computed in plain Python."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from streams_rt.kafka.partitioner import partition_for
from streams_rt.topology import BaseProcessor, Record, Serdes, Stores, StreamsBuilder, Topology, TumblingWindows

S, I64 = Serdes.string(), Serdes.int64()
WINDOWS = TumblingWindows(60_000, grace_ms=30_000)


def word_count(suffix: str = "") -> Topology:
    b = StreamsBuilder()
    lines = b.stream(f"wc-lines{suffix}", S, S)
    counts = lines.flat_map_values(str.split).group_by(lambda k, w: w, S, name="words").count("word-counts")
    counts.to_stream().to(f"wc-counts{suffix}", S, I64)
    return b.build()


def word_count_reference(lines: list[str]) -> dict[str, int]:
    return dict(Counter(w for line in lines for w in line.split()))


def page_views(suffix: str = "") -> Topology:
    b = StreamsBuilder()
    views = b.stream(f"pv-views{suffix}", S, S)
    views.group_by_key().windowed_by(WINDOWS).count("views-per-minute").to_stream().to(f"pv-counts{suffix}", None, I64)
    return b.build()


def page_views_reference(views: list[tuple[str, int]], partitions: int) -> dict[tuple[str, int], int]:
    """Per partition (a task's stream time is its own), Kafka's late-record rule record by record."""
    counts: dict[tuple[str, int], int] = defaultdict(int)
    observed: defaultdict[int, int] = defaultdict(lambda: -1)
    for page, ts in views:
        p = partition_for(page.encode(), partitions)
        observed[p] = max(observed[p], ts)
        for start in WINDOWS.starts_for(ts):
            if start + WINDOWS.size_ms > observed[p] - WINDOWS.grace_ms:
                counts[(page, start)] += 1
    return dict(counts)


def enrich_orders(suffix: str = "") -> Topology:
    b = StreamsBuilder()
    customers = b.table(f"eo-customers{suffix}", S, S, store="customers")
    orders = b.stream(f"eo-orders{suffix}", S, S)
    orders.join(customers, lambda order, name: f"{order}:{name}").to(f"eo-enriched{suffix}", S, S)
    return b.build()


class Deduplicate(BaseProcessor):
    """Forwards a key's first record; every 100 ms of stream time forwards the distinct keys seen."""

    def init(self, context: Any) -> None:
        super().init(context)
        self.seen = context.get_state_store("seen")
        context.schedule(100, self.report)

    def process(self, record: Record) -> None:
        if self.seen.get(record.key) is None:
            self.seen.put(record.key, record.timestamp)
            self.context.forward(record)

    def report(self, stream_time: int) -> None:
        self.context.forward(Record("distinct", str(sum(1 for _ in self.seen.all())), stream_time))


def deduplicate(suffix: str = "") -> Topology:
    b = StreamsBuilder()
    b.stream(f"dd-events{suffix}", S, S).process(Deduplicate, stores=[Stores.key_value("seen", S, I64)],
                                        key_serde=S, value_serde=S).to(f"dd-firsts{suffix}", S, S)
    return b.build()


def numbers(suffix: str = "") -> Topology:
    """Int64 values in, doubled out: bad bytes in the input exercise the deserialization handler."""
    b = StreamsBuilder()
    b.stream(f"nb-in{suffix}", S, I64).map_values(lambda v: v * 2).to(f"nb-out{suffix}", S, I64)
    return b.build()
