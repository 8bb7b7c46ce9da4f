"""The per-batch (columnar) path against the record-at-a-time one: random topologies from the
operators that have both forms, built once with column operations (Words, Split, expressions,
map_batches, built-in aggregations with a combiner) and once with the equivalent Python functions,
run through the TopologyTestDriver on random batches (keys, values, timestamps, nulls), the first
per batch, the second record by record, depth-first, with no combiner. The records each batch
writes and the final stores must be equal, with caching on and off."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams_rt.tasks.testing import TopologyTestDriver
from streams_rt.topology import HoppingWindows, KStream, Serdes, StreamsBuilder, Topology, TumblingWindows
from streams_rt.topology.columns import Split, Value, Words

S, L = Serdes.string(), Serdes.int64()

STEPS = ["even_length", "words", "split_dash", "rekey_by_value", "value_as_key", "upper", "drop_null_key"]
AGGREGATIONS = [None, "count", "sum", "min", "max", "mean"]
GROUPINGS = ["by_key", "by_first_letter", "by_value"]
WINDOWS = [None, "tumbling", "hopping"]


@dataclass(frozen=True)
class Spec:
    steps: tuple[str, ...]
    aggregation: str | None
    grouping: str
    windows: str | None


def _step(stream: KStream, step: str, columnar: bool) -> KStream:
    if step == "even_length":
        if columnar:
            even = pc.equal(pc.bit_wise_and(pc.utf8_length(pc.field("value")), pc.scalar(1)), pc.scalar(0))
            return stream.filter(even)
        return stream.filter(lambda k, v: v is not None and len(v) % 2 == 0)
    if step == "words":
        return stream.flat_map_values(Words() if columnar else (lambda v: [] if v is None else v.split()))
    if step == "split_dash":
        return stream.flat_map_values(Split("-") if columnar else (lambda v: [] if v is None else v.split("-")))
    if step == "rekey_by_value":
        if columnar:
            return stream.map_batches(lambda b: b.set_column(0, "key", b.column("value")))
        return stream.select_key(lambda k, v: v)
    if step == "value_as_key":
        return stream.select_key(Value() if columnar else (lambda k, v: v))
    if step == "upper":  # a Python function in both: mixed topologies
        return stream.map_values(lambda v: None if v is None else v.upper())
    assert step == "drop_null_key"
    return stream.filter(lambda k, v: k is not None)


def _lengths(stream: KStream, columnar: bool) -> KStream:
    """Values as their length (int64): what sum, min, max and mean take."""
    if columnar:
        def lengths(batch: pa.RecordBatch) -> pa.RecordBatch:
            values = cast(pa.StringArray, batch.column("value"))
            return batch.set_column(1, "value", pc.utf8_length(values).cast(pa.int64()))

        return stream.map_batches(lengths, value_serde=L)
    return stream.map_values(lambda v: None if v is None else len(v), value_serde=L)


def build(spec: Spec, columnar: bool) -> Topology:
    b = StreamsBuilder()
    stream = b.stream("input", S, S)
    for step in spec.steps:
        stream = _step(stream, step, columnar)
    if spec.aggregation is None:
        stream.to("out")
        return b.build()
    if spec.aggregation != "count":
        stream = _lengths(stream, columnar)
    if spec.grouping == "by_key":
        grouped = stream.group_by_key(combine=columnar, name="grouped")
    elif spec.grouping == "by_value":
        grouped = stream.group_by(Value() if columnar else (lambda k, v: v), stream.value_serde, name="grouped",
                                  combine=columnar)
    else:
        grouped = stream.group_by(lambda k, v: None if k is None else k[:1], S, name="grouped", combine=columnar)
    if spec.windows is None:
        table = getattr(grouped, spec.aggregation)("agg")
        values = table.value_serde
        table.to_stream().to("out", grouped.key_serde, values)
        return b.build()
    windows = TumblingWindows(10, grace_ms=5) if spec.windows == "tumbling" else HoppingWindows(10, 5, grace_ms=3)
    table = getattr(grouped.windowed_by(windows), spec.aggregation)("agg")
    table.to_stream().map(lambda w, v: (f"{w.key}@{w.start}", v), S, table.value_serde).to("out")
    return b.build()


specs = st.builds(Spec, st.lists(st.sampled_from(STEPS), max_size=3).map(tuple), st.sampled_from(AGGREGATIONS),
                  st.sampled_from(GROUPINGS), st.sampled_from(WINDOWS))
records = st.tuples(st.sampled_from(["a", "b", "ab", None]),
                    st.sampled_from(["", "a", "ab", "a b", "ab-ba", " b  a ", "abc-", "-", None]),
                    st.integers(0, 60))
batches = st.lists(st.lists(records, min_size=1, max_size=6), min_size=1, max_size=6)


def run(spec: Spec, columnar: bool, cache: int, input_batches: list[list[tuple[Any, Any, int]]]) -> tuple[
        list[list[tuple[Any, Any, int]]], dict[str, list[tuple[Any, ...]]]]:
    driver = TopologyTestDriver(build(spec, columnar), cache_max_bytes=cache, columnar=columnar)
    written = []
    for batch in input_batches:
        driver.pipe_batch("input", batch)
        written.append([(r.key, r.value, r.timestamp) for r in driver.read_output_records("out")])
    stores = {name: sorted(driver.store_rows(name), key=repr) for name in driver.topology.stores}
    driver.close()
    return written, stores


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs, input_batches=batches, cache=st.sampled_from([0, 10 << 20]))
def test_per_batch_and_record_at_a_time_agree(spec: Spec, input_batches: list[list[tuple[Any, Any, int]]],
                                              cache: int) -> None:
    assert run(spec, True, cache, input_batches) == run(spec, False, cache, input_batches)
