"""The OffsetCheckpoint format: round trip, Kafka's exact text, malformed inputs, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams_rt.protocol import OFFSET_SUM_OFFSET_UNKNOWN, TopicPartition
from streams_rt.state.checkpoint import OffsetCheckpoint, format_checkpoint, offset_sum, parse_checkpoint
from streams_rt.state.errors import CorruptCheckpoint, StatePathError

topics = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=40)
offsets_maps = st.dictionaries(
    st.builds(TopicPartition, topics, st.integers(0, 2**31 - 1)),
    st.one_of(st.integers(0, 2**63 - 1), st.just(OFFSET_SUM_OFFSET_UNKNOWN)),
    max_size=20,
)


@given(offsets_maps)
def test_round_trip(offsets: dict[TopicPartition, int]) -> None:
    assert parse_checkpoint(format_checkpoint(offsets)) == offsets


def test_text_is_kafkas_format() -> None:
    text = format_checkpoint({TopicPartition("app-store-changelog", 3): 42, TopicPartition("t", 0): 7})
    assert text == "0\n2\napp-store-changelog 3 42\nt 0 7\n"


def test_reads_kafka_written_whitespace_variants() -> None:
    assert parse_checkpoint("0\n1\nt  0\t5") == {TopicPartition("t", 0): 5}


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("", 1, "empty"),
        ("1\n0\n", 1, "unknown checkpoint version 1"),
        ("x\n0\n", 1, "version is not an integer"),
        ("0\n", 2, "ended before the entry count"),
        ("0\n2\nt 0 5\n", 2, "expected 2 entries but found 1"),
        ("0\n0\nt 0 5\n", 2, "expected 0 entries but found 1"),
        ("0\n1\nt 0\n", 3, "malformed line"),
        ("0\n1\nt 0 5 9\n", 3, "malformed line"),
        ("0\n1\nt zero 5\n", 3, "partition is not an integer"),
        ("0\n1\nt 0 5x\n", 3, "offset is not an integer"),
        ("0\n1\nt 0 99999999999999999999\n", 3, "offset out of range"),
        ("0\n1\nt -1 5\n", 3, "negative"),
        ("0\n1\nt 0 -7\n", 3, "negative"),
        ("0\n2\nt 0 5\nt 0 6\n", 4, "duplicate entry"),
        ("0\n1\nt 0 5\n\n", 4, "malformed line"),
    ],
)
def test_malformed_inputs_name_the_line(text: str, line: int, reason: str) -> None:
    with pytest.raises(CorruptCheckpoint) as info:
        parse_checkpoint(text, "/x/.checkpoint")
    assert info.value.line == line
    assert reason in info.value.reason
    assert "/x/.checkpoint" in str(info.value)


@given(st.binary(max_size=64))
def test_arbitrary_bytes_parse_or_raise_corrupt(data: bytes) -> None:
    try:
        result = parse_checkpoint(data.decode("utf-8", "replace"))
    except CorruptCheckpoint:
        return
    assert all(offset >= 0 or offset == OFFSET_SUM_OFFSET_UNKNOWN for offset in result.values())


def test_refuses_to_write_what_it_cannot_read() -> None:
    with pytest.raises(ValueError):
        format_checkpoint({TopicPartition("has space", 0): 1})
    with pytest.raises(ValueError):
        format_checkpoint({TopicPartition("t", 0): -1})


def test_file_round_trip_is_atomic(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path / ".checkpoint")
    assert checkpoint.read() == {}
    checkpoint.write({TopicPartition("t", 1): 10})
    checkpoint.write({TopicPartition("t", 1): 11})
    assert checkpoint.read() == {TopicPartition("t", 1): 11}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".checkpoint"]  # no .tmp left behind


def test_non_utf8_file_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(b"0\n1\n\xff\xfe 0 1\n")
    with pytest.raises(CorruptCheckpoint, match="not UTF-8"):
        OffsetCheckpoint(path).read()


def test_offset_sum_follows_kafka() -> None:
    assert offset_sum({}) == 0
    assert offset_sum({TopicPartition("a", 0): 5, TopicPartition("b", 0): 7}) == 12
    # An unknown changelog offset counts as nothing held, as in Kafka's sumOfChangelogOffsets.
    assert offset_sum({TopicPartition("a", 0): 5, TopicPartition("b", 0): OFFSET_SUM_OFFSET_UNKNOWN}) == 5
    assert offset_sum({TopicPartition("a", 0): 2**63 - 1, TopicPartition("b", 0): 5}) == 2**63 - 1


@pytest.mark.timeout(30)  # a blocking open of a FIFO would hang: the timeout interrupts it and fails
def test_a_fifo_is_a_corrupt_checkpoint_read_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    os.mkfifo(path)
    with pytest.raises(CorruptCheckpoint, match="line 0: is a FIFO, not a regular file"):
        OffsetCheckpoint(path).read()
    OffsetCheckpoint(path).delete()
    assert not path.exists()


def test_a_directory_is_a_corrupt_checkpoint_and_never_deleted(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.mkdir()
    checkpoint = OffsetCheckpoint(path)
    with pytest.raises(CorruptCheckpoint, match="is a directory"):
        checkpoint.read()
    for act in (checkpoint.delete, lambda: checkpoint.write({TopicPartition("t", 0): 1})):
        with pytest.raises(StatePathError) as caught:
            act()
        assert caught.value.path == path
    assert path.is_dir()


@pytest.mark.timeout(30)
def test_a_special_file_left_at_the_temporary_name_is_replaced(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path / ".checkpoint")
    os.mkfifo(tmp_path / ".checkpoint.tmp")
    checkpoint.write({TopicPartition("t", 0): 5})
    assert checkpoint.read() == {TopicPartition("t", 0): 5}
