"""A user's topology module, outside the streams-rt checkout: the task hosts import it by reference
(`word_topology:topology`), so on a cluster it must reach the executors (spark.submit.pyFiles)."""

from __future__ import annotations

from streams_rt.topology import Serdes, StreamsBuilder, Topology


def topology(lines: str, counts: str) -> Topology:
    builder = StreamsBuilder()
    words = builder.stream(lines, Serdes.string(), Serdes.string()).flat_map_values(str.split)
    words.group_by(lambda key, word: word, Serdes.string(), name="words").count("counts") \
        .to_stream().to(counts, Serdes.string(), Serdes.int64())
    return builder.build()
