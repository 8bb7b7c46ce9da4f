"""KTable#suppress beyond what the Kafka Streams oracle compares (tests/kstreams_oracle): the
misuses the DSL refuses, and a bounded buffer that shuts down when full failing the task with the
reason instead of emitting early."""

from __future__ import annotations

import pytest

from streams_rt.tasks.testing import TopologyTestDriver
from streams_rt.topology import BufferConfig, Serdes, StreamsBuilder, Suppressed, TopologyError, TumblingWindows

S = Serdes.string()


def test_until_window_closes_needs_a_windowed_table_and_a_buffer_that_never_emits_early() -> None:
    b = StreamsBuilder()
    counts = b.stream("in", S, S).group_by_key().count("counts")
    with pytest.raises(TopologyError, match="windowed aggregation"):
        counts.suppress(Suppressed.until_window_closes())
    with pytest.raises(TopologyError, match="never emits early"):
        Suppressed.until_window_closes(BufferConfig.of_max_records(5))
    with pytest.raises(TopologyError, match="negative"):
        Suppressed.until_time_limit(-1)


def test_a_full_buffer_that_shuts_down_fails_with_the_reason() -> None:
    b = StreamsBuilder()
    (b.stream("in", S, S).group_by_key().windowed_by(TumblingWindows(10)).count("counts")
     .suppress(Suppressed.until_window_closes(BufferConfig.of_max_records(1).shut_down_when_full()))
     .to_stream().map(lambda k, v: (k.key, v), S, Serdes.int64()).to("out"))
    driver = TopologyTestDriver(b.build())
    try:
        driver.pipe("in", "a", "x", 1)
        with pytest.raises(Exception, match="over its limit of 1 records"):
            driver.pipe("in", "b", "x", 2)
    finally:
        driver.close()


def test_until_time_limit_emits_each_keys_latest_update_once_the_limit_has_passed() -> None:
    b = StreamsBuilder()
    (b.stream("in", S, S).group_by_key().count("counts").suppress(Suppressed.until_time_limit(5))
     .to_stream().to("out"))
    driver = TopologyTestDriver(b.build())
    try:
        for key, timestamp in [("a", 0), ("a", 3), ("b", 4), ("a", 5), ("c", 9)]:
            driver.pipe("in", key, "v", timestamp)
        # a was buffered at 0 (its later updates kept that place): out at stream time 5 with its
        # latest count; b (buffered at 4) at 9; c still waits.
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output_records("out", S, Serdes.int64())] == [
            ("a", 3, 5), ("b", 1, 4)]
    finally:
        driver.close()
