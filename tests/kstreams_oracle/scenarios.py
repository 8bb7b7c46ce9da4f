"""Scenarios for the oracle, from hypothesis: few keys (so they collide), values with nulls, timestamps
out of order and far enough apart that windows close and records arrive later than grace."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.kstreams_oracle.oracle import Event

KEYS = st.sampled_from(["a", "b", "c", "both", None])
VALUES = st.sampled_from(["", "a", "b", "x", "ab", "ba", "abc", "bab", None])
TIMESTAMPS = st.integers(0, 60)


def events(input_topics: list[str], max_records: int = 20) -> st.SearchStrategy[list[Event]]:
    """Records on the given input topics, with the odd wall-clock advance between them."""
    record = st.tuples(st.just("record"), st.sampled_from(input_topics), KEYS, VALUES, TIMESTAMPS)
    advance = st.tuples(st.just("advance"), st.integers(1, 30))
    return st.lists(st.one_of(record, record, record, advance), max_size=max_records)
