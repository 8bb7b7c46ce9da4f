"""read_store's columns, pure (no Spark, no hosts): the Spark type per serde, and the endpoint's JSON
values back as those types, through the same codec the endpoint writes them with."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.iq.codec import to_json
from streams_rt.spark.store_columns import UndecodableValue, column_value, store_schema
from streams_rt.topology.serdes import Serde, Serdes

SERDES: dict[str, Serde[Any]] = {"string": Serdes.string(), "int32": Serdes.int32(), "int64": Serdes.int64(),
                                 "bytes": Serdes.bytes(), "json": Serdes.json()}
VALUES = {"string": st.text(), "int32": st.integers(-(2**31), 2**31 - 1), "int64": st.integers(-(2**63), 2**63 - 1),
          "bytes": st.binary(), "json": st.dictionaries(st.text(max_size=5), st.integers() | st.text(), max_size=4)}


def test_the_schema_names_a_spark_type_per_serde() -> None:
    assert store_schema("string", "int64") == "key STRING, value BIGINT, task STRING, batch BIGINT"
    assert store_schema("bytes", "int32") == "key BINARY, value INT, task STRING, batch BIGINT"
    assert store_schema("json", "my-avro") == "key STRING, value STRING, task STRING, batch BIGINT"


@settings(deadline=None)  # timings are the loaded machine's, not the code's
@given(st.sampled_from(sorted(SERDES)).flatmap(lambda name: st.tuples(st.just(name), VALUES[name])))
def test_stored_values_come_back_as_their_column_type(case: tuple[str, Any]) -> None:
    name, value = case
    serde = SERDES[name]
    data = serde.serialize(value)
    assert data is not None
    column = column_value(name, to_json(serde, data))
    if name == "json":
        assert Serdes.json().deserialize(column.encode()) == value  # JSON text of the same value
    else:
        assert column == value


def test_bytes_a_typed_serde_cannot_read_fail_rather_than_vanish() -> None:
    answered = to_json(Serdes.int64(), b"\x01\x02")  # not 8 bytes
    with pytest.raises(UndecodableValue, match="int64 serde could not read"):
        column_value("int64", answered)
    assert column_value("json", to_json(Serdes.json(), b"{not json")).startswith('{"undecodable":')
