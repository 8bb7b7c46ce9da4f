"""Topologies the host tests run (hosts import them by 'module:attr', as a real application's
hosts import its code)."""

from __future__ import annotations

from streams_rt.topology import Serdes, StreamsBuilder, Topology

S, I64 = Serdes.string(), Serdes.int64()


def word_count() -> Topology:
    b = StreamsBuilder()
    lines = b.stream("wc-lines", S, S)
    counts = lines.flat_map_values(str.split).group_by(lambda k, w: w, S, name="words").count("word-counts")
    counts.to_stream().to("wc-counts", S, I64)
    return b.build()
