"""The examples run as `python examples/<name>.py` does (here for 20 s on the test broker and the
shared local[2] Spark): what their queries wrote equals a reference over the input they produced."""

from __future__ import annotations

import collections
import json
from typing import Any, Protocol

import pytest
from pyspark.sql import SparkSession

from examples import enrich_orders, page_views, word_count
from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.partitioner import partition_for
from streams_rt.topology import TumblingWindows

pytestmark = pytest.mark.broker


class ExampleModule(Protocol):
    """What the examples share: `main(argv, spark, keep_inputs)` returns examples.runner.Outcome."""

    def main(self, argv: list[str] | None = None, spark: Any = None, keep_inputs: bool = False) -> Any: ...


def run(module: ExampleModule, broker: BrokerInfo, spark: SparkSession) -> tuple[list[Any], list[tuple[str, Any]], Any]:
    """The rows the query wrote, the input records, and the example's store as queried over HTTP."""
    outcome = module.main(["--seconds", "20", "--bootstrap", broker.bootstrap_servers,
                           "--records-per-second", "500"], spark, keep_inputs=True)
    assert outcome.produced > 1000 and outcome.rows and len(outcome.inputs) == outcome.produced
    return outcome.rows, [(topic.rsplit("-", 1)[0], record) for topic, record in outcome.inputs], outcome.store


def test_word_count(kafka_broker: BrokerInfo, spark: SparkSession) -> None:
    rows, inputs, store = run(word_count, kafka_broker, spark)
    latest: dict[str, int] = {}
    for row in rows:
        latest[row.key] = max(latest.get(row.key, 0), row.value)
    expected = dict(collections.Counter(w for _, (_, line, _) in inputs for w in line.decode().split()))
    assert latest == expected
    assert store == expected  # the live store, read over HTTP from both hosts, says the same


def test_page_views(kafka_broker: BrokerInfo, spark: SparkSession) -> None:
    rows, inputs, _ = run(page_views, kafka_broker, spark)
    windows = TumblingWindows(60_000, grace_ms=10_000)
    expected: dict[tuple[str, int], int] = collections.Counter()
    observed: dict[int, int] = collections.defaultdict(lambda: -1)
    for _, (page, _, ts) in inputs:  # Kafka's late-record rule, per partition (a task's stream time)
        p = partition_for(page.encode(), 2)
        observed[p] = max(observed[p], ts)
        for start in windows.starts_for(ts):
            if start + windows.size_ms > observed[p] - windows.grace_ms:
                expected[(page, start)] += 1
    latest: dict[tuple[str, int], int] = {}
    for row in rows:
        key = (row.key.key, int(row.key.start.timestamp() * 1000))
        latest[key] = max(latest.get(key, 0), row.value)
    assert latest == dict(expected)


def test_enrich_orders(kafka_broker: BrokerInfo, spark: SparkSession) -> None:
    rows, inputs, _ = run(enrich_orders, kafka_broker, spark)
    orders = [(cid, json.loads(value)) for topic, (cid, value, _) in inputs if topic == "orders"]
    found = sorted((row.key, json.loads(row.value)["order"], json.loads(row.value)["customer"]) for row in rows)
    assert found == sorted((cid, order["order"], enrich_orders.CUSTOMERS[cid]) for cid, order in orders)
