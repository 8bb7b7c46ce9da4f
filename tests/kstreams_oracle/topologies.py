"""The reference topologies written with streams_rt's DSL: each is the twin of the one of the same name
in java/KStreamsOracle.java (same operators, same user functions, same store and topic names), so that
Kafka Streams' TopologyTestDriver and ours can run the same scenarios. Change both together.

User functions mirror their Java twins exactly, nulls included (`None` where Java has `null`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streams_rt.tasks.execution.emit import OUTER_JOIN_EMIT_INTERVAL, WINDOWED_AGGREGATION_EMIT_INTERVAL
from streams_rt.topology import (
    BaseProcessor,
    PunctuationType,
    Record,
    Serde,
    Serdes,
    Stores,
    StreamsBuilder,
    Topology,
)
from streams_rt.topology.joins import JoinWindows
from streams_rt.topology.suppress import BufferConfig, Suppressed
from streams_rt.topology.windows import (
    EmitStrategy,
    HoppingWindows,
    SessionWindows,
    SlidingWindows,
    TumblingWindows,
)

S, L = Serdes.string(), Serdes.int64()


def j(text: str | None) -> str:
    """Java's string conversion in a concatenation: null becomes "null"."""
    return "null" if text is None else text


@dataclass(frozen=True)
class Reference:
    """A topology and the serdes of the topics scenarios write (inputs) and read (outputs), and
    properties both drivers get (Kafka's names)."""

    build: Callable[[], Topology]
    inputs: dict[str, tuple[Serde[Any], Serde[Any]]]
    outputs: dict[str, tuple[Serde[Any], Serde[Any]]]
    properties: dict[str, Any] = field(default_factory=dict)


def _strings(*topics: str) -> dict[str, tuple[Serde[Any], Serde[Any]]]:
    return {topic: (S, S) for topic in topics}


def _stateless() -> Topology:
    b = StreamsBuilder()
    s = b.stream("input", S, S)
    s.filter(lambda k, v: v is not None and len(v) % 2 == 0).map_values(str.upper).to("out-filter-map")
    s.filter_not(lambda k, v: k is None).select_key(lambda k, v: v[0] if v else None).to("out-select-key")
    s.flat_map_values(lambda v: [] if v is None else list(v)).to("out-flat-values")
    s.map(lambda k, v: (v, k)).to("out-swap")

    def fan_out(k: str | None, v: str | None) -> list[tuple[str, str | None]]:
        n = 0 if v is None else len(v) % 3
        return [("k" + str(i) if k is None else k + str(i), v) for i in range(n)]

    s.flat_map(fan_out).peek(lambda k, v: None).to("out-flat-map")
    return b.build()


def _branch_merge() -> Topology:
    b = StreamsBuilder()
    branches = (b.stream("input", S, S)
                .flat_map_values(lambda v: ["~"] if v is None else list(v))
                .split("b-")
                .branch(lambda k, v: v == "a", "a")
                .branch(lambda k, v: v == "b", "b")
                .default_branch("rest"))
    a = branches["b-a"].map_values(lambda v: j(v) + "!")
    bs = branches["b-b"].filter(lambda k, v: k is not None)
    rest = branches["b-rest"].map_values(lambda v: j(v) + j(v))
    a.merge(bs).merge(rest).to("out")
    return b.build()


def _merge_sources() -> Topology:
    b = StreamsBuilder()
    left = b.stream("input", S, S)
    right = b.stream("input-2", S, S)
    left.merge(right.map_values(lambda v: None if v is None else "r:" + v)).to("out")
    return b.build()


def _count() -> Topology:
    b = StreamsBuilder()
    b.stream("input", S, S).group_by_key().count("counts").to_stream().to("out", S, L)
    return b.build()


def _reduce() -> Topology:
    b = StreamsBuilder()
    b.stream("input", S, S).group_by_key().reduce(lambda agg, v: j(agg) + j(v), "reduced").to_stream().to("out")
    return b.build()


def _aggregate_group_by() -> Topology:
    b = StreamsBuilder()
    (b.stream("input", S, S)
     .group_by(lambda k, v: v[0] if v else None, name="by-first")
     .aggregate(lambda: "", lambda k, v, agg: agg + ("" if k is None else k) + j(v), "aggregated")
     .to_stream().to("out"))
    return b.build()


def _window_key(windowed: Any, value: Any) -> tuple[str, Any]:
    return f"{windowed.key}@{windowed.start}", value


def _windowed_count_tumbling() -> Topology:
    b = StreamsBuilder()
    (b.stream("input", S, S).group_by_key().windowed_by(TumblingWindows(10, grace_ms=5))
     .count("wcounts").to_stream().map(_window_key, S, L).to("out"))
    return b.build()


def _windowed_reduce_hopping() -> Topology:
    b = StreamsBuilder()
    (b.stream("input", S, S).group_by_key().windowed_by(HoppingWindows(10, 5, grace_ms=3))
     .reduce(lambda agg, v: j(agg) + ("~" if v is None else v), "wreduced")
     .to_stream().map(_window_key, S, S).to("out"))
    return b.build()


def _session_key(windowed: Any, value: Any) -> tuple[str, Any]:
    return f"{windowed.key}@{windowed.start}-{windowed.end}", value


def _session_windows() -> Topology:
    b = StreamsBuilder()
    grouped = b.stream("input", S, S).group_by_key()
    (grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 3)).count("scounts")
     .to_stream().map(_session_key, S, L).to("out-count"))
    (grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(4))
     .aggregate(lambda: "", lambda k, v, agg: agg + ("~" if v is None else v), lambda k, a, c: a + "|" + c, "saggs")
     .to_stream().map(_session_key, S, S).to("out-agg"))
    return b.build()


def _session_reduce_on_close() -> Topology:
    b = StreamsBuilder()
    (b.stream("input", S, S).group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(6, 2))
     .emit_strategy(EmitStrategy.on_window_close())
     .reduce(lambda agg, v: j(agg) + j(v), "sreduced", retention_ms=30).to_stream().map(_session_key, S, S).to("out"))
    return b.build()


def _sliding_windows() -> Topology:
    b = StreamsBuilder()
    grouped = b.stream("input", S, S).group_by_key()
    (grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(5, 3))
     .aggregate(lambda: "", lambda k, v, agg: agg + v, "slide").to_stream().map(_session_key, S, S).to("out-agg"))
    (grouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(12)).count("slide-counts")
     .to_stream().map(_session_key, S, L).to("out-count"))
    return b.build()


def _sliding_reduce_on_close() -> Topology:
    b = StreamsBuilder()
    (b.stream("input", S, S).group_by_key().windowed_by(SlidingWindows.of_time_difference_and_grace(4, 2))
     .emit_strategy(EmitStrategy.on_window_close())
     .reduce(lambda agg, v: agg + v, "slide-reduced").to_stream().map(_session_key, S, S).to("out"))
    return b.build()


def _windowed_count_on_close() -> Topology:
    b = StreamsBuilder()
    (b.stream("input", S, S).group_by_key().windowed_by(HoppingWindows(10, 5, grace_ms=2))
     .emit_strategy(EmitStrategy.on_window_close())
     .count("wcounts-final", retention_ms=40).to_stream().map(_window_key, S, L).to("out"))
    return b.build()


def _suppress_window_closes() -> Topology:
    b = StreamsBuilder()
    grouped = b.stream("input", S, S).group_by_key()
    (grouped.windowed_by(TumblingWindows(10, grace_ms=2)).count("final-counts")
     .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
     .to_stream().map(_window_key, S, L).to("out-windows"))
    (grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 2))
     .reduce(lambda agg, v: j(agg) + j(v), "final-sessions")
     .suppress(Suppressed.until_window_closes(BufferConfig.of_max_records(100).shut_down_when_full(),
                                              name="sessions-closed"))
     .to_stream().map(_session_key, S, S).to("out-sessions"))
    return b.build()


def _suppress_time_limit() -> Topology:
    b = StreamsBuilder()
    grouped = b.stream("input", S, S).group_by_key()
    (grouped.count("limited-counts").suppress(Suppressed.until_time_limit(7, BufferConfig.of_max_records(2)))
     .to_stream().to("out-counts"))
    (grouped.reduce(lambda agg, v: j(agg) + j(v), "limited-concat")
     .suppress(Suppressed.until_time_limit(4, BufferConfig.unbounded(), name="concat-limit"))
     .to_stream().to("out-concat"))
    return b.build()


def _table() -> Topology:
    b = StreamsBuilder()
    b.table("input", S, S, store="table-store").to_stream().to("out")
    return b.build()


def _stream_table_join() -> Topology:
    b = StreamsBuilder()
    table = b.table("table-input", S, S, store="joined-table")
    stream = b.stream("input", S, S)
    stream.join(table, lambda sv, tv: j(sv) + "+" + j(tv)).to("out-inner")
    stream.left_join(table, lambda sv, tv: j(sv) + "+" + j(tv)).to("out-left")
    return b.build()


def _repartition_count() -> Topology:
    b = StreamsBuilder()
    (b.stream("input", S, S).select_key(lambda k, v: v).repartition("rekeyed")
     .group_by_key().count("rcounts").to_stream().to("out", S, L))
    return b.build()


def _joined(left: str | None, right: str | None) -> str:
    return j(left) + "+" + j(right)


def _stream_stream_join() -> Topology:
    b = StreamsBuilder()
    left, right = b.stream("input", S, S), b.stream("input-2", S, S)
    left.join(right, _joined, JoinWindows.of_time_difference_and_grace(15, 3), name="sj", store_name="sjs").to("out")
    return b.build()


def _stream_stream_left_join() -> Topology:
    b = StreamsBuilder()
    left, right = b.stream("input", S, S), b.stream("input-2", S, S)
    (left.left_join(right, _joined, windows=JoinWindows.of_time_difference_with_no_grace(6).before(2))
     .map_values(lambda v: j(v) + "!").to("out"))
    return b.build()


def _stream_stream_outer_join() -> Topology:
    b = StreamsBuilder()
    left, right = b.stream("input", S, S), b.stream("input-2", S, S)
    left.outer_join(right, _joined, JoinWindows.of_time_difference_and_grace(4, 5).after(7)).to("out")
    return b.build()


class _ConcatProcessor(BaseProcessor):
    """Per key, the concatenation of its values (None as "~"), forwarded on every update; every 10 ms
    of stream time a ("tick", "<number of keys>@<stream time>") record, every 15 ms of wall-clock time
    a ("wall", "<number of keys>@<wall-clock time>") record stamped with the stream time."""

    def init(self, context: Any) -> None:
        super().init(context)
        self.store = context.get_state_store("sums")
        context.schedule(10, self._tick)
        context.schedule(15, self._wall, PunctuationType.WALL_CLOCK_TIME)

    def _tick(self, time: int) -> None:
        keys = sum(1 for _ in self.store.all())
        self.context.forward(Record("tick", f"{keys}@{time}", time))

    def _wall(self, time: int) -> None:
        self.context.forward(Record("wall", f"{self.store.approximate_count()}@{time}",
                                    max(0, self.context.stream_time)))

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        old = self.store.get(record.key)
        updated = ("" if old is None else old) + ("~" if record.value is None else record.value)
        self.store.put(record.key, updated)
        self.context.forward(record.with_value(updated))


class _RoutingProcessor(BaseProcessor):
    """Routes each record by name: values of even length to the child "evens", others (and None) to
    "odds"; a record with key "both" goes to both, "odds" first."""

    def process(self, record: Record) -> None:
        if record.key == "both":
            self.context.forward(record, "odds")
            self.context.forward(record.with_value(j(record.value) + "!"), "evens")
            return
        even = record.value is not None and len(record.value) % 2 == 0
        self.context.forward(record, "evens" if even else "odds")


def _processor_routing() -> Topology:
    b = StreamsBuilder()
    routed = b.stream("input", S, S).process(_RoutingProcessor, key_serde=S, value_serde=S, name="router")
    routed.to("out-evens", name="evens")
    routed.map_values(lambda v: None if v is None else v.upper(), name="odds").to("out-odds")
    return b.build()


def _processor() -> Topology:
    b = StreamsBuilder()
    (b.stream("input", S, S).filter(lambda k, v: v is None or v != "x")
     .process(_ConcatProcessor, stores=[Stores.key_value("sums", S, S, in_memory=True)], key_serde=S, value_serde=S)
     .to("out"))
    return b.build()


REFERENCES: dict[str, Reference] = {
    "stateless": Reference(_stateless, _strings("input"),
                           _strings("out-filter-map", "out-select-key", "out-flat-values", "out-swap",
                                    "out-flat-map")),
    "branch_merge": Reference(_branch_merge, _strings("input"), _strings("out")),
    "merge_sources": Reference(_merge_sources, _strings("input", "input-2"), _strings("out")),
    "count": Reference(_count, _strings("input"), {"out": (S, L)}),
    "reduce": Reference(_reduce, _strings("input"), _strings("out")),
    "aggregate_group_by": Reference(_aggregate_group_by, _strings("input"), _strings("out")),
    "windowed_count_tumbling": Reference(_windowed_count_tumbling, _strings("input"), {"out": (S, L)}),
    "windowed_reduce_hopping": Reference(_windowed_reduce_hopping, _strings("input"), _strings("out")),
    "session_windows": Reference(_session_windows, _strings("input"),
                                 {"out-count": (S, L), "out-agg": (S, S)}),
    # Emit-on-window-close aggregations look for closed windows at most once per interval of
    # wall-clock time: after every record, or every 10 ms of the drivers' clocks. Their stores
    # keep windows longer than the default retention (window size, or gap, plus grace), with which
    # an in-memory store has dropped a window by the time it closes and nothing would be emitted.
    "session_reduce_on_close": Reference(_session_reduce_on_close, _strings("input"), _strings("out"),
                                         {WINDOWED_AGGREGATION_EMIT_INTERVAL: 0}),
    "sliding_windows": Reference(_sliding_windows, _strings("input"), {"out-agg": (S, S), "out-count": (S, L)}),
    "sliding_reduce_on_close": Reference(_sliding_reduce_on_close, _strings("input"), _strings("out"),
                                         {WINDOWED_AGGREGATION_EMIT_INTERVAL: 10}),
    "windowed_count_on_close": Reference(_windowed_count_on_close, _strings("input"), {"out": (S, L)},
                                         {WINDOWED_AGGREGATION_EMIT_INTERVAL: 0}),
    "suppress_window_closes": Reference(_suppress_window_closes, _strings("input"),
                                        {"out-windows": (S, L), "out-sessions": (S, S)}),
    "suppress_time_limit": Reference(_suppress_time_limit, _strings("input"),
                                     {"out-counts": (S, L), "out-concat": (S, S)}),
    "table": Reference(_table, _strings("input"), _strings("out")),
    "stream_table_join": Reference(_stream_table_join, _strings("input", "table-input"),
                                   _strings("out-inner", "out-left")),
    "repartition_count": Reference(_repartition_count, _strings("input"), {"out": (S, L)}),
    "stream_stream_join": Reference(_stream_stream_join, _strings("input", "input-2"), _strings("out")),
    # Left/outer joins look for closed windows at most once per interval of wall-clock time: after
    # every record here, every 10 ms of the drivers' clocks in the outer join.
    "stream_stream_left_join": Reference(_stream_stream_left_join, _strings("input", "input-2"), _strings("out"),
                                         {OUTER_JOIN_EMIT_INTERVAL: 0}),
    "stream_stream_outer_join": Reference(_stream_stream_outer_join, _strings("input", "input-2"), _strings("out"),
                                          {OUTER_JOIN_EMIT_INTERVAL: 10}),
    "processor": Reference(_processor, _strings("input"), _strings("out")),
    "processor_routing": Reference(_processor_routing, _strings("input"), _strings("out-evens", "out-odds")),
}
