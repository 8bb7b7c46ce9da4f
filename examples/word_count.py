"""Word count: lines in, a running count per word out, through a repartition topic (group_by the
word), with the counts in a queryable store `word-counts`."""

from __future__ import annotations

from streams_rt.topology import Serdes, StreamsBuilder, Topology


def topology(lines: str = "text-lines", counts: str = "word-counts") -> Topology:
    builder = StreamsBuilder()
    words = builder.stream(lines, Serdes.string(), Serdes.string()).flat_map_values(str.split)
    table = words.group_by(lambda key, word: word, Serdes.string(), name="words").count("word-counts")
    table.to_stream().to(counts, Serdes.string(), Serdes.int64())
    return builder.build()
