"""The runtime's semantics, in-process (TopologyTestDriver: in-memory stores and topics, no broker):
each topology's results equal a reference computed in plain Python."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Message
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state.stores import InMemoryKeyValueStore, InMemoryWindowStore
from streams_rt.tasks import batch_record
from streams_rt.tasks.execution.emit import EmitIntervals
from streams_rt.tasks.execution.runner import (
    DeserializationFailed,
    DeserializationHandler,
    ProcessingFailed,
    SubtopologyRunner,
)
from streams_rt.tasks.testing import TopologyTestDriver
from streams_rt.topology import (
    BaseProcessor,
    HoppingWindows,
    JoinWindows,
    Record,
    Serdes,
    Stores,
    StreamsBuilder,
    TimeWindows,
    TumblingWindows,
    Windowed,
)

S, I64 = Serdes.string(), Serdes.int64()


def word_count(cache: int = 0, partitions: int = 2) -> TopologyTestDriver:
    b = StreamsBuilder()
    lines = b.stream("lines", S, S)
    counts = lines.flat_map_values(str.split).group_by(lambda k, w: w, S, name="words").count("counts")
    counts.to_stream().to("word-counts")
    return TopologyTestDriver(b.build(), {"lines": partitions}, cache_max_bytes=cache)


def test_the_driver_reads_and_writes_with_the_topology_serdes() -> None:
    """The README's tour: no serdes passed, the topology's own are used both ways."""
    from examples.word_count import topology

    driver = TopologyTestDriver(topology())
    driver.pipe("text-lines", "l1", "hello world hello")
    assert driver.read_output("word-counts") == [("hello", 1), ("world", 1), ("hello", 2)]
    assert driver.key_value_store("word-counts") == {"hello": 2, "world": 1}
    with pytest.raises(KeyError, match="not a source topic"):
        driver.pipe("word-counts", "k", "v")
    with pytest.raises(KeyError, match="not an output topic"):
        driver.read_output("text-lines")


lines_strategy = st.lists(st.lists(st.sampled_from("a b c d e f g h".split()), max_size=6).map(" ".join), max_size=30)


@settings(max_examples=60, deadline=None)
@given(lines_strategy, st.integers(1, 3), st.sampled_from([0, 300, 1 << 20]))  # off, flushing often, large
def test_word_count_equals_a_counter(lines: list[str], partitions: int, cache: int) -> None:
    driver = word_count(cache, partitions)
    for i, line in enumerate(lines):
        driver.pipe("lines", f"line-{i}", line, 1_000 + i, S, S)
    expected = Counter(w for line in lines for w in line.split())
    assert driver.key_value_store("counts") == dict(expected)
    out = driver.read_output("word-counts", S, I64)
    last: dict[str, int] = {}
    for word, count in out:
        assert count > last.get(word, 0), "counts only grow"
        last[word] = count
    assert last == dict(expected)
    if cache == 0:  # every update flows through: 1, 2, ..., n per word
        assert Counter(word for word, _ in out) == expected


def test_a_cache_collapses_updates_within_a_batch() -> None:
    driver = word_count(cache=1 << 20, partitions=1)
    driver.pipe("lines", "k", "a a a b a", 1, S, S)  # one batch
    assert sorted(driver.read_output("word-counts", S, I64)) == [("a", 4), ("b", 1)]
    driver = word_count(cache=0, partitions=1)
    driver.pipe("lines", "k", "a a a b a", 1, S, S)
    assert [c for w, c in driver.read_output("word-counts", S, I64) if w == "a"] == [1, 2, 3, 4]


def windowed_reference(records: list[tuple[str, int]], windows: TimeWindows) -> dict[tuple[str, int], int]:
    """Kafka's rule with the aggregation's own observed stream time, record by record."""
    counts: dict[tuple[str, int], int] = defaultdict(int)
    observed = -1
    for key, ts in records:
        observed = max(observed, ts)
        for start in windows.starts_for(ts):
            if start + windows.size_ms > observed - windows.grace_ms:
                counts[(key, start)] += 1
    return dict(counts)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("xyz"), st.integers(0, 200)), max_size=40),
    st.sampled_from([TumblingWindows(20, 10), HoppingWindows(30, 10, 5), TumblingWindows(50)]),
)
def test_windowed_count_drops_late_records_like_kafka(records: list[tuple[str, int]], windows: TimeWindows) -> None:
    b = StreamsBuilder()
    counted = (b.stream("clicks", S, S).group_by_key().windowed_by(windows)
               .count("clicks-per-window", retention_ms=10_000))
    counted.to_stream().to("out")
    driver = TopologyTestDriver(b.build())
    for key, ts in records:
        driver.pipe("clicks", key, "page", ts, S, S)
    expected = windowed_reference(records, windows)
    found = {(key, start): count for key in "xyz"
             for start, count in driver.window_store("clicks-per-window", key)}
    assert found == expected
    out = driver.read_output("out", None, I64)
    assert len(out) == sum(expected.values())  # no cache: one update per counted record and window


def test_windowed_output_keys_carry_their_window() -> None:
    b = StreamsBuilder()
    counts = b.stream("clicks", S, S).group_by_key().windowed_by(TumblingWindows(10)).count("w")
    seen: list[Any] = []
    counts.to_stream().peek(lambda k, v: seen.append((k, v))).to("out")
    driver = TopologyTestDriver(b.build())
    driver.pipe("clicks", "p", "x", 13, S, S)
    assert seen == [(Windowed("p", 10, 20), 1)]


def test_stream_table_join_uses_the_table_as_of_each_record() -> None:
    b = StreamsBuilder()
    customers = b.table("customers", S, S, store="customers")
    orders = b.stream("orders", S, S)
    orders.join(customers, lambda order, name: f"{order} for {name}").to("enriched", S, S)
    orders.left_join(customers, lambda order, name: f"{order} for {name}").to("enriched-left", S, S)
    driver = TopologyTestDriver(b.build(), {"orders": 2, "customers": 2})
    driver.pipe("orders", "c1", "o1", 1, S, S)  # no customer yet
    driver.pipe("customers", "c1", "Ada", 2, S, S)
    driver.pipe("orders", "c1", "o2", 3, S, S)
    driver.pipe("customers", "c1", "Ada L.", 4, S, S)
    driver.pipe("orders", "c1", "o3", 5, S, S)
    driver.pipe("customers", "c1", None, 6, S, S)  # a tombstone deletes the customer
    driver.pipe("orders", "c1", "o4", 7, S, S)
    assert driver.read_output("enriched", S, S) == [("c1", "o2 for Ada"), ("c1", "o3 for Ada L.")]
    assert [v for _, v in driver.read_output("enriched-left", S, S)] == [
        "o1 for None", "o2 for Ada", "o3 for Ada L.", "o4 for None"]
    assert driver.key_value_store("customers") == {}


class Deduplicate(BaseProcessor):
    """Forwards a key's first record only; every 100 ms of stream time, forwards how many distinct
    keys it has seen (key "distinct")."""

    def init(self, context: Any) -> None:
        super().init(context)
        self.seen = context.get_state_store("seen")
        self.punctuations: list[int] = []
        context.schedule(100, self.report)

    def process(self, record: Record) -> None:
        if self.seen.get(record.key) is None:
            self.seen.put(record.key, record.timestamp)
            self.context.forward(record)

    def report(self, stream_time: int) -> None:
        self.punctuations.append(stream_time)
        self.context.forward(Record("distinct", str(sum(1 for _ in self.seen.all())), stream_time))


def test_processor_api_with_a_store_and_stream_time_punctuation() -> None:
    b = StreamsBuilder()
    processors: list[Deduplicate] = []

    def supplier() -> Deduplicate:
        processors.append(Deduplicate())
        return processors[-1]

    b.stream("events", S, S).process(supplier, stores=[Stores.key_value("seen", S, I64)],
                                     key_serde=S, value_serde=S).to("firsts", S, S)
    driver = TopologyTestDriver(b.build())
    events = [("a", 0), ("b", 40), ("a", 90), ("c", 150), ("a", 160), ("d", 420), ("e", 430)]
    for key, ts in events:
        driver.pipe("events", key, "v", ts, S, S)
    out = driver.read_output("firsts", S, S)
    # Punctuations (Kafka's STREAM_TIME rule): due at 0, 100, 200, ...; a jump fires once.
    assert processors[0].punctuations == [0, 150, 420]
    assert out == [("a", "v"), ("distinct", "1"), ("b", "v"), ("c", "v"), ("distinct", "3"), ("d", "v"),
                   ("distinct", "4"), ("e", "v")]
    assert driver.key_value_store("seen") == {"a": 0, "b": 40, "c": 150, "d": 420, "e": 430}


def test_stateless_operators_and_branches() -> None:
    b = StreamsBuilder()
    numbers = b.stream("n", S, I64)
    peeked: list[int] = []
    branches = (numbers.filter(lambda k, v: v >= 0).peek(lambda k, v: peeked.append(v))
                .map_values(lambda v: v * 10).split(prefix="b-")
                .branch(lambda k, v: v % 20 == 0, name="even").default_branch("odd"))
    branches["b-even"].flat_map(lambda k, v: [(k, v), (k + "!", v + 1)]).to("even")
    branches["b-odd"].map(lambda k, v: (v, k), key_serde=I64, value_serde=S).to("odd")
    branches["b-even"].merge(branches["b-odd"]).filter_not(lambda k, v: True).to("nothing")
    driver = TopologyTestDriver(b.build())
    for i, v in enumerate([1, -2, 2, 3, 4]):
        driver.pipe("n", f"k{i}", v, i, S, I64)
    assert peeked == [1, 2, 3, 4]
    assert driver.read_output("even", S, I64) == [("k2", 20), ("k2!", 21), ("k4", 40), ("k4!", 41)]
    assert driver.read_output("odd", I64, S) == [(10, "k0"), (30, "k3")]
    assert driver.read_output("nothing") == []


def test_reduce_and_aggregate() -> None:
    b = StreamsBuilder()
    stream = b.stream("s", S, I64)
    stream.group_by_key().reduce(max, "max")
    stream.group_by_key().aggregate(lambda: "", lambda k, v, agg: agg + str(v), "concat", S)
    driver = TopologyTestDriver(b.build())
    for v in [3, 9, 4]:
        driver.pipe("s", "k", v, 0, S, I64)
    assert driver.key_value_store("max") == {"k": 9} and driver.key_value_store("concat") == {"k": "394"}


def test_undeserializable_records_fail_the_batch_with_their_coordinates() -> None:
    b = StreamsBuilder()
    b.stream("numbers", S, I64).to("out")
    driver = TopologyTestDriver(b.build())
    driver.pipe("numbers", "a", 1, 0, S, I64)
    with pytest.raises(DeserializationFailed) as failure:
        driver.pipe_raw("numbers", b"b", b"not eight bytes", 1)
    assert (failure.value.topic, failure.value.partition, failure.value.offset) == ("numbers", 0, 1)
    assert "expected 8 bytes" in str(failure.value)


def test_log_and_continue_skips_and_counts_each_bad_record(caplog: pytest.LogCaptureFixture) -> None:
    b = StreamsBuilder()
    b.stream("numbers", S, I64).to("out")
    driver = TopologyTestDriver(b.build(), deserialization_handler=DeserializationHandler.LOG_AND_CONTINUE)
    with caplog.at_level(logging.WARNING):
        driver.pipe_raw("numbers", b"a", (1).to_bytes(8, "big"), 0)
        driver.pipe_raw("numbers", b"b", b"bad", 1)
        driver.pipe_raw("numbers", b"c", b"bad!", 2)
    assert driver.read_output("out", S, I64) == [("a", 1)]
    skips = [r for r in caplog.records if "cannot be deserialized" in r.getMessage()]
    assert len(skips) == 2 and "numbers-0@1" in skips[0].getMessage() and "numbers-0@2" in skips[1].getMessage()
    assert sum(r.skipped_deserialization for r in driver._runners.values()) == 2


def test_an_exception_in_user_code_names_the_input_record() -> None:
    b = StreamsBuilder()
    (b.stream("lines", S, S).flat_map_values(str.split).map_values(lambda w: 1 // (w != "boom"), I64)
     .group_by(lambda k, v: k, S, name="g").count("c"))
    driver = TopologyTestDriver(b.build(), {"lines": 1})
    driver.pipe("lines", "k", "fine words", 0, S, S)
    with pytest.raises(ProcessingFailed) as failure:
        driver.pipe("lines", "k", "x boom y", 1, S, S)
    assert (failure.value.topic, failure.value.partition, failure.value.offset) == ("lines", 0, 1)
    assert "KSTREAM-MAPVALUES" in str(failure.value) and "ZeroDivisionError" in str(failure.value)



def view(offset: int, timestamp: int) -> Message:
    return Message(topic="views", partition=0, offset=offset, key=b"p", value=b"v",
                   timestamp=(TIMESTAMP_CREATE_TIME, timestamp))


def test_an_aborted_batch_takes_back_the_stream_time_it_advanced() -> None:
    """A failed batch is retried with the same records; the stream time it reached must not make
    its own first records late the second time. Stream times round-trip through the batch record."""
    builder = StreamsBuilder()
    views = builder.stream("views", Serdes.string(), Serdes.string())
    views.group_by_key().windowed_by(TumblingWindows(60_000, grace_ms=0)).count("per-minute")
    topology = builder.build()
    definition = topology.stores["per-minute"]
    assert definition.retention_ms is not None and definition.window_size_ms is not None
    store = InMemoryWindowStore("per-minute", definition.retention_ms, definition.window_size_ms)
    store.open()
    store.attach_changelog(lambda key, value: None)
    runner = SubtopologyRunner(topology, topology.subtopologies[0], TaskId(0, 0), "app", {"per-minute": store},
                               lambda topic, records: None)
    tp = TopicPartition("views", 0)
    runner.process({tp: [view(0, 100_000)]})
    committed = runner.stream_times()
    assert list(committed.values()) == [100_000]  # the window node's (the task's own only with processors)
    runner.committed(committed)
    runner.process({tp: [view(1, 10_000_000)]})
    assert list(runner.stream_times().values()) == [10_000_000]
    runner.abort()
    assert runner.stream_times() == committed
    writes = batch_record.encode({tp: (0, 1)}, pa.RecordBatch.from_pylist([{"x": 1}]), 0, None, committed)
    last = batch_record.decode(writes.get)
    assert last is not None and last.stream_times == committed


def test_an_aborted_batch_of_a_left_join_emits_the_held_records_it_had_emitted_again() -> None:
    """A left join's look for closed windows in a failed batch emitted (and deleted) a held record;
    the outer store rolls back, and the retried batch emits it again (the earliest held time the
    failed batch left behind is never later than what the rolled-back store holds)."""
    builder = StreamsBuilder()
    left, right = builder.stream("left", S, S), builder.stream("right", S, S)
    left.left_join(right, lambda a, b: f"{a}+{b}", JoinWindows.of_time_difference_with_no_grace(10),
                   store_name="j").to("out")
    topology = builder.build()
    stores: dict[str, Any] = {}
    for name, definition in topology.stores.items():
        if definition.windowed:
            assert definition.retention_ms is not None and definition.window_size_ms is not None
            stores[name] = InMemoryWindowStore(name, definition.retention_ms, definition.window_size_ms,
                                               retain_duplicates=True)
        else:
            stores[name] = InMemoryKeyValueStore(name)
        stores[name].open()
        stores[name].attach_changelog(lambda key, value: None)
    runner = SubtopologyRunner(topology, topology.subtopologies[0], TaskId(0, 0), "app", stores,
                               lambda topic, records: None, emit_intervals=EmitIntervals(0, 0))

    def record(offset: int, key: bytes, timestamp: int) -> Message:
        return Message(topic="left", partition=0, offset=offset, key=key, value=b"v",
                       timestamp=(TIMESTAMP_CREATE_TIME, timestamp))

    def emitted() -> list[bytes | None]:
        return [value for out in runner.take_output() for value in out.values]

    tp = TopicPartition("left", 0)
    runner.process({tp: [record(0, b"a", 0)]})
    assert emitted() == []  # held: its window is open
    for store in stores.values():
        store.commit(None)
    runner.committed(runner.stream_times())
    runner.process({tp: [record(1, b"b", 100)]})
    assert emitted() == [b"v+None"]  # a's window closed
    for store in stores.values():
        store.rollback()
    runner.abort()
    runner.process({tp: [record(1, b"b", 100)]})
    assert emitted() == [b"v+None"]
