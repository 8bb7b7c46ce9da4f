"""The examples run as `python examples/<name>.py` does (here for 20 s on the test broker and the
shared local[2] Spark): what their queries wrote equals a reference over the input they produced.
And one runs as a user runs it, as its own process, stopped with Ctrl-C."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession

from examples import ad_clicks, enrich_orders, page_views, user_sessions, word_count
from examples.runner import example_path
from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.partitioner import partition_for
from streams_rt.topology import TumblingWindows
from tests.kafka.helpers import free_port

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


def test_ad_clicks(kafka_broker: BrokerInfo, spark: SparkSession) -> None:
    """Every click joined with its impression once; an impression nobody clicked at most once, with
    no click, and never one that was clicked (no spurious left-join result)."""
    rows, inputs, _ = run(ad_clicks, kafka_broker, spark)
    impressions = {key: json.loads(value)["ad"] for topic, (key, value, _) in inputs if topic == "impressions"}
    clicked = {key for topic, (key, _, _) in inputs if topic == "clicks"}
    found = collections.Counter((row.key, json.loads(row.value)["ad"], json.loads(row.value)["clicked"])
                                for row in rows)
    assert max(found.values()) == 1
    assert {(key, ad) for key, ad, was in found if was} == {(key, impressions[key]) for key in clicked}
    not_clicked = {(key, ad) for key, ad, was in found if not was}
    assert not_clicked and all(key not in clicked and impressions[key] == ad for key, ad in not_clicked)


def test_user_sessions(kafka_broker: BrokerInfo, spark: SparkSession) -> None:
    """Each session written once, with its final count, and every session closed by the end of the
    input (its partition's stream time past its end plus gap and grace) is there."""
    rows, inputs, _ = run(user_sessions, kafka_broker, spark)
    visits: dict[str, list[int]] = collections.defaultdict(list)
    newest: dict[int, int] = collections.defaultdict(lambda: -1)
    for _, (user, _, ts) in inputs:
        visits[user].append(ts)
        p = partition_for(user.encode(), 2)
        newest[p] = max(newest[p], ts)
    reference: set[tuple[str, int, int, int]] = set()
    for user, times in visits.items():
        times.sort()
        start = previous = times[0]
        count = 0
        for ts in times:
            if ts - previous > user_sessions.GAP_MS:
                reference.add((user, start, previous, count))
                start, count = ts, 0
            previous, count = ts, count + 1
        reference.add((user, start, previous, count))
    found = [(row.key, s["start"], s["end"], s["visits"]) for row in rows for s in (json.loads(row.value),)]
    assert found and len(found) == len(set(found)) and set(found) <= reference
    closed = {s for s in reference
              if s[2] + user_sessions.GAP_MS + user_sessions.GRACE_MS <= newest[partition_for(s[0].encode(), 2)]}
    assert closed <= set(found)


def test_ctrl_c_stops_word_count_cleanly_and_its_summary_is_a_complete_cut(kafka_broker: BrokerInfo,
                                                                            tmp_path: Path) -> None:
    """Ctrl-C as a terminal sends it: SIGINT to the example's whole process group, mid-run. The example
    stops its producer, lets the query process everything produced, stops, and prints top words that
    are exact counts of the input topic; no traceback, no Java stack, no ERROR line."""
    with open(tmp_path / "stderr", "w") as stderr:
        example = subprocess.Popen(
            [sys.executable, str(example_path("word_count")), "--bootstrap", kafka_broker.bootstrap_servers,
             "--seconds", "900", "--records-per-second", "500"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True,
            cwd=tmp_path)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in example.stdout or ():
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 300
        while not any(re.search(r"batch +[1-9]\d* .*processed [1-9]", line) for line in seen):
            assert example.poll() is None, "".join(seen)
            assert time.monotonic() < deadline, "no micro-batch with records within 300 s:\n" + "".join(seen)
            with contextlib.suppress(queue.Empty):
                seen.append(lines.get(timeout=1))
        os.killpg(example.pid, signal.SIGINT)
        assert example.wait(300) == 0, "".join(seen)
    finally:
        if example.poll() is None:
            os.killpg(example.pid, signal.SIGKILL)
            example.wait()
    while not lines.empty():
        seen.append(lines.get())
    out, err = "".join(seen), (tmp_path / "stderr").read_text()
    assert "Ctrl-C: stopping cleanly" in out and "top words" in out, out
    for text in (out, err):
        assert not re.search(r"Traceback|Exception|\bERROR\b|^\s+at [a-z]+\.", text, re.MULTILINE), text
    application = re.search(r"^application (word-count-\w+):", out, re.MULTILINE)
    assert application is not None, out
    top = {word: int(count.replace(",", "")) for word, count in
           re.findall(r"^\s+(\w+)\s+([\d,]+)$", out.split("top words", 1)[1], re.MULTILINE)}
    counts = collections.Counter(word for line in read_topic(kafka_broker.bootstrap_servers,
                                                            f"text-lines-{application[1].rsplit('-', 1)[1]}")
                                 for word in line.split())
    assert len(top) == 10 and top == {word: counts[word] for word in top}


def read_topic(bootstrap: str, topic: str) -> list[str]:
    """Every value of `topic`, from each partition's beginning to its end now."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        values: list[str] = []
        positions = dict.fromkeys(partitions, 0)
        deadline = time.monotonic() + 120
        while any(positions[p] < ends[p] for p in partitions):
            assert time.monotonic() < deadline, (positions, ends)
            for message in consumer.consume(num_messages=1000, timeout=1.0):
                assert message.error() is None, message.error()
                values.append((message.value() or b"").decode())
                positions[message.partition() or 0] = (message.offset() or 0) + 1
        return values
    finally:
        consumer.close()


def test_an_unreachable_broker_is_one_line_and_exit_code_1(tmp_path: Path) -> None:
    bootstrap = f"127.0.0.1:{free_port()}"
    result = subprocess.run([sys.executable, str(example_path("page_views")), "--bootstrap", bootstrap],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert (result.returncode, result.stdout) == (1, ""), result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach Kafka at 127.0.0.1:"), result.stderr
    assert "Connection refused" in lines[0]
