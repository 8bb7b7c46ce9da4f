"""A foreign-key join across topics partitioned differently (Kafka's TopologyTestDriver, and so the
oracle, has one partition per topic): subscriptions go to the foreign table's partition, responses
back to the entry's, in batches. Whatever the order, once everything is processed the join's result
is the join of the two final tables, computed here in plain Python."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams_rt.tasks.testing import TopologyTestDriver
from tests.kstreams_oracle.scenarios import KEYS, TIMESTAMPS, VALUES
from tests.kstreams_oracle.table_topologies import fk_join

RECORDS = st.lists(st.tuples(st.sampled_from(["input", "input-2"]), KEYS, VALUES, TIMESTAMPS), max_size=40)


def _table(records: list[tuple[str, Any, Any, int]], topic: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for t, key, value, _ in records:
        if t == topic and key is not None:
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
    return table


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(records=RECORDS, batch=st.integers(1, 8))
def test_the_result_is_the_join_of_the_final_tables(records: list[tuple[str, Any, Any, int]], batch: int) -> None:
    driver = TopologyTestDriver(fk_join(), {"input": 3, "input-2": 2})
    try:
        for start in range(0, len(records), batch):
            for topic in ("input", "input-2"):
                driver.pipe_batch(topic, [(k, v, ts) for t, k, v, ts in records[start:start + batch] if t == topic])
        left = {k: v for k, v in driver.read_output("out-left")}
        inner = {k: v for k, v in driver.read_output("out-inner")}
        stored = {k: v for k, v, _ in driver.store_rows("fk-left")}
    finally:
        driver.close()
    orders, customers = _table(records, "input"), _table(records, "input-2")

    def foreign(order: str) -> str | None:
        return customers.get(order[0]) if order else None

    expected_left = {k: f"{o}/{foreign(o) or 'null'}" for k, o in orders.items()}
    assert stored == expected_left
    assert {k: v for k, v in left.items() if v is not None} == expected_left
    assert {k: v for k, v in inner.items() if v is not None} == {
        k: f"{o}/{foreign(o)}" for k, o in orders.items() if foreign(o) is not None}
