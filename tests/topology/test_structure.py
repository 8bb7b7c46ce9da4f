"""The topology's shape, pure: subtopologies split as Kafka Streams splits them, the description
text, the layout on a cluster, and clear errors naming the node."""

from __future__ import annotations

import pytest

from streams_rt.kafka.partitioner import murmur2, partition_for
from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.topology import BaseProcessor, Record, Serdes, Stores, StreamsBuilder, TopologyError, TumblingWindows
from streams_rt.topology.nodes import SinkNode


def word_count(combine: bool = False) -> StreamsBuilder:
    b = StreamsBuilder()
    lines = b.stream("lines", Serdes.string(), Serdes.string())
    grouped = lines.flat_map_values(str.split).group_by(lambda k, w: w, Serdes.string(), name="words", combine=combine)
    grouped.count("counts").to_stream().to("word-counts")
    return b


def test_a_combiner_sends_partial_counts_through_the_repartition_topic() -> None:
    """Named apart from Kafka's numbering: every other node keeps the name Kafka gives it."""
    combined, plain = word_count(combine=True).build(), word_count().build()
    assert [len(s.nodes) for s in combined.subtopologies] == [5, 4]
    names = [n.name for n in combined.subtopologies[0].nodes]
    assert names == [n.name for n in plain.subtopologies[0].nodes][:3] + ["words-combine", "KSTREAM-SINK-0000000003"]
    sink = combined.subtopologies[0].nodes[-1]
    assert isinstance(sink, SinkNode) and sink.value_serde is not None and sink.value_serde.name == "int64"
    assert [n.name for n in combined.subtopologies[1].nodes] == [n.name for n in plain.subtopologies[1].nodes]


def test_word_count_splits_at_the_repartition_topic_and_describes_like_kafka() -> None:
    topology = word_count().build()
    assert [len(s.nodes) for s in topology.subtopologies] == [4, 4]
    assert topology.describe() == """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Sink: KSTREAM-SINK-0000000003 (topic: words-repartition)
      <-- KSTREAM-KEY-SELECT-0000000002

   Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000004 (topics: [words-repartition])
      --> KSTREAM-AGGREGATE-0000000005
    Processor: KSTREAM-AGGREGATE-0000000005 (stores: [counts])
      --> KTABLE-TOSTREAM-0000000006
      <-- KSTREAM-SOURCE-0000000004
    Processor: KTABLE-TOSTREAM-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000007
      <-- KSTREAM-AGGREGATE-0000000005
    Sink: KSTREAM-SINK-0000000007 (topic: word-counts)
      <-- KTABLE-TOSTREAM-0000000006
"""


def test_the_layout_sizes_tasks_and_internal_topics_from_the_sources() -> None:
    layout = word_count().build().layout("app", {"lines": 3})
    assert layout.tasks() == [TaskId(s, p) for s in (0, 1) for p in range(3)]
    assert layout.repartition_topics == {"app-words-repartition": 3}
    assert layout.changelog_topics == {"app-counts-changelog": 3}
    assert layout.input_partitions(TaskId(1, 2)) == [TopicPartition("app-words-repartition", 2)]
    assert layout.stateless == frozenset({0})


def test_a_repartition_topic_takes_the_most_partitions_of_its_writers_inputs() -> None:
    b = StreamsBuilder()
    merged = b.stream("a").merge(b.stream("b"))
    merged.group_by(lambda k, v: v, name="g").count("c")
    layout = b.build().layout("app", {"a": 2, "b": 5})
    assert layout.repartition_topics == {"app-g-repartition": 5}
    assert layout.partitions == {0: 5, 1: 5}


def test_a_stream_table_join_lives_in_one_subtopology_with_its_table() -> None:
    b = StreamsBuilder()
    table = b.table("customers", Serdes.string(), Serdes.string(), store="customers")
    b.stream("orders", Serdes.string(), Serdes.string()).join(table, lambda o, c: (o, c)).to("enriched")
    topology = b.build()
    assert len(topology.subtopologies) == 1
    assert topology.layout("app", {"orders": 4, "customers": 4}).partitions == {0: 4}
    with pytest.raises(TopologyError, match="co-partitioned topics disagree on partition counts"):
        topology.layout("app", {"orders": 4, "customers": 3})


def test_processors_sharing_a_store_share_a_subtopology() -> None:
    b = StreamsBuilder()
    store = Stores.key_value("shared")
    b.stream("a").process(BaseProcessor, stores=[store])
    b.stream("b").process(BaseProcessor, stores=["shared"])
    assert len(b.build().subtopologies) == 1


def test_errors_name_the_node() -> None:
    b = StreamsBuilder()
    b.stream("a").process(BaseProcessor, stores=["nowhere"], name="my-processor")
    with pytest.raises(TopologyError, match="my-processor.*unknown store 'nowhere'"):
        b.build()
    with pytest.raises(TopologyError, match="KSTREAM-SOURCE-0000000000.*\\['lines'\\] do not exist"):
        word_count().build().layout("app", {})
    b = StreamsBuilder()
    keyed = b.stream("s").map(lambda k, v: (v, k))
    with pytest.raises(TopologyError, match="repartition"):
        keyed.join(b.table("t"), lambda a, c: a)
    with pytest.raises(TopologyError, match="topic name"):
        StreamsBuilder().stream("bad topic")
    with pytest.raises(TopologyError, match="retention"):
        StreamsBuilder().stream("s").group_by_key().windowed_by(TumblingWindows(10_000, 5_000)).count(retention_ms=100)


def test_murmur2_matches_kafkas_own_test_vectors() -> None:
    # Kafka's UtilsTest.testMurmur2 values.
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    assert {k: murmur2(k) for k in cases} == cases
    assert partition_for(b"21", 10) == (-973932308 & 0x7FFFFFFF) % 10


def test_records_derive_with_their_timestamp() -> None:
    r = Record("k", 1, 5)
    assert r.with_value(2) == Record("k", 2, 5) and r.with_key("j").key == "j" and r.with_timestamp(9).timestamp == 9
