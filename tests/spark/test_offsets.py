"""The source's offsets, pure (no Spark, no broker): positions round-trip with their batch number, and
the number moves exactly when a position does, as Spark's batch id moves exactly when the source
offers a new end."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.protocol import TopicPartition
from streams_rt.spark.offsets import BATCH_KEY, BEFORE_FIRST_BATCH, batch_of, decode_offsets, encode_offsets, next_end

topics = st.sampled_from(["lines", "app-words-repartition", "a:b", "x.y_z"])
positions = st.dictionaries(st.builds(TopicPartition, topics, st.integers(0, 7)), st.integers(0, 2**62), max_size=8)


@settings(deadline=None)  # timings are the loaded machine's, not the code's
@given(positions, st.integers(BEFORE_FIRST_BATCH, 2**40))
def test_positions_and_the_batch_number_round_trip_through_json(found: dict[TopicPartition, int], batch: int) -> None:
    raw = json.loads(json.dumps(encode_offsets(found, batch)))
    assert decode_offsets(raw) == found and batch_of(raw) == batch


@settings(deadline=None)  # timings are the loaded machine's, not the code's
@given(positions, st.lists(positions, min_size=1, max_size=12))
def test_the_batch_number_counts_the_new_ends_only(first: dict[TopicPartition, int],
                                                   offers: list[dict[TopicPartition, int]]) -> None:
    """Spark runs a micro-batch for each new end and none for an end equal to its start: the
    number of the n-th new end is n - 1, as Spark's n-th batch is."""
    start = json.loads(json.dumps(encode_offsets(first, BEFORE_FIRST_BATCH)))
    batches_run = 0
    for offered in offers:
        end = json.loads(json.dumps(next_end(start, offered)))
        if end == start:
            assert offered == decode_offsets(start)
            continue
        assert batch_of(end) == batches_run and decode_offsets(end) == offered
        batches_run += 1
        start = end


def test_an_offset_written_before_batches_were_numbered_counts_as_the_initial_one() -> None:
    old = {"lines:0": 5, "lines:1": 7}
    assert batch_of(old) == BEFORE_FIRST_BATCH
    assert next_end(old, {TopicPartition("lines", 0): 6, TopicPartition("lines", 1): 7})[BATCH_KEY] == 0
    assert next_end(old, decode_offsets(old)) == old


def test_a_task_catching_up_on_a_batch_it_sat_out_gets_a_batch_at_the_same_positions() -> None:
    start = encode_offsets({TopicPartition("lines", 0): 5}, 3)
    assert next_end(start, decode_offsets(start)) == start  # nothing new: no batch
    end = next_end(start, decode_offsets(start), catch_up=True)
    assert batch_of(end) == 4 and decode_offsets(end) == decode_offsets(start)
