"""Column operations through the TopologyTestDriver: JSON fields, expressions on struct fields, bytes
that pass through a filter unchanged, map_batches' contract, and serdes' whole-column forms."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.tasks.execution.runner import ProcessingFailed
from streams_rt.tasks.testing import TopologyTestDriver
from streams_rt.topology import Field, Serde, Serdes, StreamsBuilder, Value, Words

S, J, L = Serdes.string(), Serdes.json(), Serdes.int64()


def test_a_json_field_becomes_the_value_or_the_key() -> None:
    b = StreamsBuilder()
    orders = b.stream("orders", S, J)
    orders.map_values(Field("user.id"), L).to("user-ids", S, L)
    orders.select_key(Field("item"), S).to("by-item", S, J)
    driver = TopologyTestDriver(b.build())
    driver.pipe_batch("orders", [("o1", {"user": {"id": 7}, "item": "book"}, 1),
                                 ("o2", {"user": {"id": 9}}, 2),
                                 ("o3", None, 3)])
    assert driver.read_output("user-ids") == [("o1", 7), ("o2", 9), ("o3", None)]
    assert [k for k, _ in driver.read_output("by-item")] == ["book", None, None]


def test_an_expression_over_a_json_field_filters_and_the_bytes_pass_unchanged() -> None:
    """The struct the expression reads has every field of the batch; what leaves is what came in."""
    b = StreamsBuilder()
    b.stream("events", S, J).filter(pc.field("value", "n") > pc.scalar(1)).to("big", S, J)
    driver = TopologyTestDriver(b.build())
    sent = [b'{"n":2,"tag":"x"}', b'{"n":1}', b'{"n":5}']
    for i, value in enumerate(sent):
        driver.pipe_raw("events", f"k{i}".encode(), value, i)
    assert [r.value for r in driver.read_output_records("big", raw=True)] == [sent[0], sent[2]]


def test_words_and_value_count_as_the_python_functions_do() -> None:
    def counts(columnar: bool) -> dict[str, int]:
        b = StreamsBuilder()
        split = Words() if columnar else (lambda v: [] if v is None else v.split())
        words = b.stream("lines", S, S).flat_map_values(split)
        grouped = words.group_by(Value() if columnar else (lambda k, w: w), S, name="w")
        grouped.count("counts")
        driver = TopologyTestDriver(b.build(), cache_max_bytes=1 << 20)
        driver.pipe_batch("lines", [("a", " to be  or not\tto be ", 1), ("b", "", 2), ("c", None, 3)])
        return driver.key_value_store("counts")

    assert counts(True) == counts(False) == {"to": 2, "be": 2, "or": 1, "not": 1}


def test_map_batches_that_breaks_its_contract_fails_naming_the_node() -> None:
    b = StreamsBuilder()
    b.stream("in", S, S).map_batches(lambda batch: batch.drop_columns(["value"]), name="broken").to("out")
    driver = TopologyTestDriver(b.build())
    with pytest.raises(ProcessingFailed, match="broken failed on record.*without \\['value'\\]"):
        driver.pipe("in", "k", "v", 1)


def test_map_batches_may_change_the_row_count_when_it_gives_timestamps() -> None:
    def twice(batch: pa.RecordBatch) -> pa.RecordBatch:
        doubled = pa.Table.from_batches([batch, batch]).combine_chunks()
        return doubled.to_batches()[0]

    b = StreamsBuilder()
    b.stream("in", S, S).map_batches(twice).to("out")
    driver = TopologyTestDriver(b.build())
    driver.pipe("in", "k", "v", 5)
    assert [(r.key, r.value, r.timestamp) for r in driver.read_output_records("out")] == [("k", "v", 5)] * 2


SERDES_AND_VALUES: list[tuple[Serde[Any], st.SearchStrategy[Any]]] = [
    (Serdes.string(), st.text()),
    (Serdes.int32(), st.integers(-2**31, 2**31 - 1)),
    (Serdes.int64(), st.integers(-2**63, 2**63 - 1)),
    (Serdes.float64(), st.floats(allow_nan=False)),
    (Serdes.bytes(), st.binary()),
    (Serdes.json(), st.dictionaries(st.sampled_from("abc"), st.integers(-100, 100))),
]


@pytest.mark.parametrize(("serde", "values"), SERDES_AND_VALUES, ids=[s.name for s, _ in SERDES_AND_VALUES])
def test_a_whole_column_reads_back_as_its_values_one_by_one(serde: Serde[Any], values: st.SearchStrategy[Any]) -> None:
    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.none() | values, max_size=20))
    def check(column: list[Any]) -> None:
        data = serde.serialize_many(column)
        array = serde.to_arrow(data)
        as_values = array.to_pylist()
        if serde.name == "json":  # a struct has every field of the column: compare what each record had
            as_values = [None if v is None else {k: x for k, x in v.items() if k in (c or {})}
                         for v, c in zip(as_values, column, strict=True)]
            assert as_values == column
            return
        assert as_values == serde.deserialize_many(data)
        assert [serde.deserialize(b) for b in serde.from_arrow(array)] == serde.deserialize_many(data)

    check()


def test_json_no_arrow_type_holds_fails_a_column_operation_clearly_and_a_function_takes_it() -> None:
    b = StreamsBuilder()
    values = b.stream("in", S, J)
    values.map_values(Field("a"), J, name="field-of-a").to("fields", S, J)
    values.map_values(lambda v: json.dumps(v, sort_keys=True), S).to("texts", S, S)
    driver = TopologyTestDriver(b.build())
    with pytest.raises(ProcessingFailed, match="field-of-a failed.*not one Arrow type.*a Python function takes any"):
        driver.pipe_batch("in", [("k1", {"a": 1}, 1), ("k2", {"a": "one"}, 2)])
    b = StreamsBuilder()
    b.stream("in", S, J).map_values(lambda v: json.dumps(v, sort_keys=True), S).to("texts", S, S)
    driver = TopologyTestDriver(b.build())
    driver.pipe_batch("in", [("k1", {"a": 1}, 1), ("k2", {"a": "one"}, 2), ("k3", [1, 2], 3)])
    assert [v for _, v in driver.read_output("texts")] == ['{"a": 1}', '{"a": "one"}', "[1, 2]"]
