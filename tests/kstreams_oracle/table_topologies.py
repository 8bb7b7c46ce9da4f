"""The table operators' reference topologies with streams_rt's DSL: twins of those in
java/TableReferences.java (same operators, user functions, store and topic names)."""

from __future__ import annotations

from typing import Any

from streams_rt.topology import StreamsBuilder, Topology
from streams_rt.topology.windows import TumblingWindows
from tests.kstreams_oracle.reference import L, Reference, S, strings


def _first_or_none(v: str) -> str | None:
    return v[0] if v else None


def _window_key(windowed: Any, value: Any) -> tuple[str, Any]:
    return f"{windowed.key}@{windowed.start}", value


def table_filter_map() -> Topology:
    b = StreamsBuilder()
    t = b.table("input", S, S)
    t.filter(lambda k, v: len(v) % 2 == 0).to_stream().to("out-filter")
    t.filter_not(lambda k, v: "a" in v, store="without-a").to_stream().to("out-filter-not")
    t.map_values(lambda v: v + "!").to_stream().to("out-map")
    t.map_values(str.upper, store="upper").filter(lambda k, v: not v.startswith("B")).to_stream().to("out-chain")
    return b.build()


def table_filter_map_materialized() -> Topology:
    b = StreamsBuilder()
    t = b.table("input", S, S, store="source")
    t.filter(lambda k, v: len(v) % 2 == 0).to_stream().to("out-filter")
    t.map_values(lambda v: v + v).filter(lambda k, v: len(v) > 4).to_stream().to("out-chain")
    t.filter_not(lambda k, v: v.startswith("b"), store="not-b").map_values(lambda v: "<" + v + ">").to_stream() \
        .to("out-not-b")
    return b.build()


def table_group_by() -> Topology:
    b = StreamsBuilder()
    g = b.table("input", S, S).group_by(lambda k, v: (_first_or_none(v), k), S, S)
    g.count("counts").to_stream().to("out-count", S, L)
    g.reduce(lambda agg, v: agg + v, lambda agg, v: agg.replace(v, "", 1), "reduced").to_stream().to("out-reduce")
    g.aggregate(lambda: "", lambda k, v, agg: agg + "+" + v, lambda k, v, agg: agg + "-" + v, "aggregated") \
        .to_stream().to("out-aggregate")
    return b.build()


def table_names() -> Topology:
    b = StreamsBuilder()
    counts = b.stream("input", S, S).filter(lambda k, v: v is not None, name="non-null").group_by(lambda k, v: v) \
        .count()
    counts.to_stream().to("out-counts", S, L)
    regrouped = counts.group_by(lambda k, n: (str(n), k), S, S, name="regroup")
    regrouped.count().to_stream().to("out-recount", S, L)
    regrouped.reduce(lambda agg, v: agg + "," + v, lambda agg, v: agg.replace("," + v, "", 1)).to_stream() \
        .to("out-keys")
    return b.build()


def table_join() -> Topology:
    b = StreamsBuilder()
    left = b.table("input", S, S)
    right = b.table("input-2", S, S, store="right")

    def joiner(lv: str, rv: str | None) -> str:
        return f"{_j(lv)}/{_j(rv)}"

    left.join(right, joiner).to_stream().to("out-inner")
    left.left_join(right, joiner).to_stream().to("out-left")
    left.outer_join(right, joiner, store="outer").to_stream().to("out-outer")
    return b.build()


def table_join_derived() -> Topology:
    b = StreamsBuilder()
    left = b.table("input", S, S).filter(lambda k, v: v != "")
    right = b.table("input-2", S, S).map_values(str.upper)
    joined = left.left_join(right, lambda lv, rv: f"{_j(lv)}/{_j(rv)}")
    joined.to_stream().to("out-joined")
    joined.outer_join(left.map_values(lambda v: str(len(v))), lambda jv, n: f"{_j(jv)}|{_j(n)}").to_stream() \
        .to("out-again")
    return b.build()


def fk_join() -> Topology:
    b = StreamsBuilder()
    orders = b.table("input", S, S, store="orders")
    customers = b.table("input-2", S, S)
    orders.join(customers, _first_or_none, lambda o, c: f"{_j(o)}/{_j(c)}").to_stream().to("out-inner")
    orders.left_join(customers, _first_or_none, lambda o, c: f"{_j(o)}/{_j(c)}", store="fk-left").to_stream() \
        .to("out-left")
    return b.build()


def fk_join_derived() -> Topology:
    b = StreamsBuilder()
    orders = b.table("input", S, S).filter(lambda k, v: v != "x")
    customers = b.table("input-2", S, S).map_values(lambda v: v + "!")
    joined = orders.left_join(customers, _first_or_none, lambda o, c: f"{_j(o)}/{_j(c)}", name="fk")
    joined.to_stream().to("out-joined")
    joined.group_by(lambda k, v: (v[0], k), S, S).count("fk-counts").to_stream().to("out-count", S, L)
    return b.build()


def aggregate_tables() -> Topology:
    b = StreamsBuilder()
    counts = b.stream("input", S, S).group_by_key().count("counts")
    counts.filter(lambda k, n: n % 2 == 0).to_stream().to("out-even", S, L)
    last = b.stream("input-2", S, S).group_by_key().reduce(lambda a, v: v + a)
    counts.map_values(lambda n: f"n{n}", S).join(last, lambda n, v: f"{n}/{v}").to_stream().to("out-joined")
    return b.build()


def table_getters() -> Topology:
    b = StreamsBuilder()
    t = b.table("input-2", S, S)
    derived = t.filter(lambda k, v: not v.startswith("b")).map_values(lambda v: v + "?")
    b.stream("input", S, S).left_join(derived, lambda s, v: f"{s}/{_j(v)}").to("out-stream-join")
    joined = t.outer_join(derived, lambda a, c: f"{_j(a)}|{_j(c)}")
    joined.group_by(lambda k, v: (v[0], v), S, S).reduce(lambda a, v: a + v, lambda a, v: a.replace(v, ""),
                                                         "by-first").to_stream().to("out-grouped")
    return b.build()


def windowed_table() -> Topology:
    b = StreamsBuilder()
    counts = b.stream("input", S, S).group_by_key().windowed_by(TumblingWindows(10, grace_ms=5)).count("wcounts")
    counts.filter(lambda wk, n: n > 1).to_stream().map(_window_key, S, L).to("out-filter")
    counts.map_values(lambda n: f"n{n}", S).filter(lambda wk, v: v != "n2").to_stream().map(_window_key, S, S) \
        .to("out-map")
    return b.build()


def cogroup() -> Topology:
    b = StreamsBuilder()
    one = b.stream("input", S, S).group_by_key()
    two = b.stream("input-2", S, S).group_by(lambda k, v: None if v is None else _first_or_none(v))
    (one.cogroup(lambda k, v, agg: agg + "1" + _j(v))
     .cogroup(two, lambda k, v, agg: agg + "2" + _j(v))
     .aggregate(lambda: "", "cogrouped").to_stream().to("out"))
    return b.build()


def cogroup_windowed() -> Topology:
    b = StreamsBuilder()
    one = b.stream("input", S, S).group_by_key()
    two = b.stream("input-2", S, S).group_by_key()
    (one.cogroup(lambda k, v, agg: agg + "1" + _j(v))
     .cogroup(two, lambda k, v, agg: agg + "2" + _j(v))
     .windowed_by(TumblingWindows(10, grace_ms=5))
     .aggregate(lambda: "", "wcogrouped")
     .to_stream().map(_window_key, S, S).to("out"))
    return b.build()


def _j(text: str | None) -> str:
    """Java's string conversion in a concatenation: null becomes "null"."""
    return "null" if text is None else text


TABLE_REFERENCES: dict[str, Reference] = {
    "table_filter_map": Reference(table_filter_map, strings("input"),
                                  strings("out-filter", "out-filter-not", "out-map", "out-chain")),
    "table_filter_map_materialized": Reference(table_filter_map_materialized, strings("input"),
                                               strings("out-filter", "out-chain", "out-not-b")),
    "table_group_by": Reference(table_group_by, strings("input"),
                                {"out-count": (S, L), **strings("out-reduce", "out-aggregate")}),
    "table_names": Reference(table_names, strings("input"),
                             {"out-counts": (S, L), "out-recount": (S, L), **strings("out-keys")}),
    "table_join": Reference(table_join, strings("input", "input-2"), strings("out-inner", "out-left", "out-outer")),
    "table_join_derived": Reference(table_join_derived, strings("input", "input-2"),
                                    strings("out-joined", "out-again")),
    "fk_join": Reference(fk_join, strings("input", "input-2"), strings("out-inner", "out-left")),
    "fk_join_derived": Reference(fk_join_derived, strings("input", "input-2"),
                                 {**strings("out-joined"), "out-count": (S, L)}),
    "aggregate_tables": Reference(aggregate_tables, strings("input", "input-2"),
                                  {"out-even": (S, L), **strings("out-joined")}),
    "table_getters": Reference(table_getters, strings("input", "input-2"), strings("out-stream-join", "out-grouped")),
    "windowed_table": Reference(windowed_table, strings("input"), {"out-filter": (S, L), **strings("out-map")}),
    "cogroup": Reference(cogroup, strings("input", "input-2"), strings("out")),
    "cogroup_windowed": Reference(cogroup_windowed, strings("input", "input-2"), strings("out")),
}
