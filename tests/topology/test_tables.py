"""Table operators without a broker: the formats their internal topics use (Kafka's), when a table
read from a topic gets a store, the layout of a foreign-key join's internal topics (and its store,
which no query lists), and the built-in aggregations of a grouped table against a plain Python
reference. Their semantics against Kafka Streams itself are held by tests/kstreams_oracle."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.iq.routing import store_catalog
from streams_rt.tasks.testing import TopologyTestDriver
from streams_rt.topology import Change, Serdes, StreamsBuilder, TopologyError
from streams_rt.topology.changes import ChangedSerde, read_varint, write_varint
from streams_rt.topology.subscriptions import (
    CombinedKeySerde,
    Instruction,
    Response,
    ResponseSerde,
    Subscription,
    SubscriptionSerde,
)
from streams_rt.topology.windows import SessionWindows

S, L = Serdes.string(), Serdes.int64()


def test_a_change_is_written_in_kafkas_changed_serializer_format() -> None:
    serde = ChangedSerde(S)
    assert serde.serialize(Change("ab", None)) == b"ab\x01"
    assert serde.serialize(Change(None, "ab")) == b"ab\x00"
    assert serde.serialize(Change("ab", "c")) == b"\x04abc\x02"  # zig-zag varint of 2, then new, old
    with pytest.raises(ValueError, match="neither"):
        serde.serialize(Change(None, None))


@given(new=st.one_of(st.none(), st.text()), old=st.one_of(st.none(), st.text()))
def test_a_change_reads_back_as_written(new: str | None, old: str | None) -> None:
    if new is None and old is None:
        return
    serde = ChangedSerde(S)
    assert serde.deserialize(serde.serialize(Change(new, old))) == Change(new, old)


@given(st.integers(-(2**31), 2**31 - 1))
def test_varints_are_kafkas_zigzag_ones(value: int) -> None:
    data = write_varint(value)
    assert read_varint(data) == (value, len(data))
    assert len(data) <= 5


def test_subscriptions_and_responses_read_back_as_written() -> None:
    subscriptions = SubscriptionSerde(S)
    for sub in (Subscription(bytes(range(16)), Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, "k", 3),
                Subscription(None, Instruction.DELETE_KEY_AND_PROPAGATE, "", 0)):
        assert subscriptions.deserialize(subscriptions.serialize(sub)) == sub
    responses = ResponseSerde(S)
    assert responses.deserialize(responses.serialize(Response(bytes(16), "v"))) == Response(bytes(16), "v")
    # As in Kafka: a value of no bytes comes back as no value.
    assert responses.deserialize(responses.serialize(Response(None, ""))) == Response(None, None)
    keys = CombinedKeySerde(S, S)
    assert keys.serialize(("fk", "pk")) == b"\x00\x00\x00\x02fkpk"
    assert keys.deserialize(b"\x00\x00\x00\x02fkpk") == ("fk", "pk")
    assert keys.serialize(("fk", "pk")).startswith(keys.prefix("fk"))  # type: ignore[union-attr]


def test_a_table_without_a_store_name_is_materialized_only_when_an_operator_needs_it() -> None:
    b = StreamsBuilder()
    plain = b.table("plain", S, S)
    plain.filter(lambda k, v: True).to_stream().to("out")
    assert b.build().stores == {}
    joined = b.table("joined", S, S)
    b.stream("events", S, S).join(joined, lambda v, t: v)
    assert set(b.build().stores) == {"joined-STATE-STORE-0000000006"}  # as Kafka 4.4 names it
    assert joined.store is None  # queryable only under a name it was given


def test_a_foreign_key_joins_internal_topics_take_each_sides_partition_count() -> None:
    b = StreamsBuilder()
    orders, customers = b.table("orders", S, S, store="orders"), b.table("customers", S, S, store="customers")
    orders.join(customers, lambda v: v, lambda o, c: o).to_stream().to("out")
    layout = b.build().layout("app", {"orders": 4, "customers": 2})
    registration, response = sorted(layout.repartition_topics)
    assert "REGISTRATION" in registration and "RESPONSE" in response
    assert layout.repartition_topics == {registration: 2, response: 4}
    assert sorted(layout.partitions.values()) == [2, 4]
    # Its subscription store is internal: interactive queries list only the tables' stores.
    assert any("SUBSCRIPTION-STATE-STORE" in name for name in b.build().stores)
    assert set(store_catalog(b.build(), layout)) == {"orders", "customers"}


def test_a_grouped_table_has_no_min_or_max() -> None:
    grouped = StreamsBuilder().table("t", S, L, store="t").group_by(lambda k, v: (k, v), S, L)
    for aggregation in (grouped.min, grouped.max):
        with pytest.raises(TopologyError, match="cannot be undone"):
            aggregation()


UPDATES = st.lists(st.tuples(st.sampled_from("abcde"), st.one_of(st.none(), st.integers(-50, 50))), max_size=40)


@settings(max_examples=60, deadline=None)
@given(updates=UPDATES, caching=st.booleans())
def test_a_grouped_tables_count_sum_and_mean_follow_its_entries(updates: list[tuple[str, int | None]],
                                                               caching: bool) -> None:
    """Each entry counted (and summed) under its value's parity: an update takes the old value out
    and puts the new one in, a delete takes it out."""
    b = StreamsBuilder()
    grouped = b.table("t", S, L).group_by(lambda k, v: ("even" if v % 2 == 0 else "odd", v), S, L)
    grouped.count("counts")
    grouped.sum("sums")
    grouped.mean("means")
    driver = TopologyTestDriver(b.build(), cache_max_bytes=10 << 20 if caching else 0)
    table: dict[str, int] = {}
    seen: set[str] = set()
    for key, value in updates:
        driver.pipe("t", key, value, 0)
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
        seen.update("even" if v % 2 == 0 else "odd" for v in table.values())
    groups: dict[str, list[int]] = defaultdict(list)
    for value in table.values():
        groups["even" if value % 2 == 0 else "odd"].append(value)
    counts: Counter[str] = Counter({g: len(vs) for g, vs in groups.items()})
    assert driver.key_value_store("counts") == {g: counts[g] for g in seen}
    assert driver.key_value_store("sums") == {g: sum(groups[g]) for g in seen}
    means = driver.key_value_store("means")
    for group in seen:
        values: list[Any] = groups[group]
        assert means[group]["count"] == len(values)
        assert means[group]["mean"] == (sum(values) / len(values) if values else None)


def test_a_join_that_would_read_a_session_windowed_table_is_refused_by_name() -> None:
    b = StreamsBuilder()
    sessions = b.stream("clicks", S, S).group_by_key().windowed_by(SessionWindows(10)).count("sessions")
    other = b.table("t", S, S, store="t")
    with pytest.raises(TopologyError, match="session-windowed table .store sessions"):
        sessions.join(other, lambda n, v: v)
    with pytest.raises(TopologyError, match="session-windowed"):
        b.stream("s", S, S).join(sessions.filter(lambda k, n: n > 1), lambda v, n: v, name="by-session")
