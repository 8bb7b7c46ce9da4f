"""What the examples share: the embedded defaults (a local Kafka broker and local Spark), their topics,
a producer of sample input running in the background, the streaming query, a progress line while it
runs (batches, records/s, task states, standby lag), and a clean stop on Ctrl-C or, when stdin is not
a terminal (CI, `make demo` in a pipeline), after a bounded run."""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from streams_rt import StreamsRuntime
from streams_rt.iq import Client
from streams_rt.kafka.dev_broker import DevBroker
from streams_rt.rpc.batches import BatchError, HostClient
from streams_rt.spark.session import build_session

Record = tuple[str | None, bytes, int]  # key, value, timestamp (ms)


@dataclass
class Example:
    """One runnable example: its topics, its topology ('module:attr' with args), sample input, and
    what to print at the end from the rows the query produced."""

    name: str
    topology: str
    inputs: Mapping[str, int]  # topic -> partitions (the names get a run suffix)
    outputs: Mapping[str, int]
    sample: Callable[[Callable[[str], str]], Iterator[tuple[str, Record]]]  # (topic, record)...
    summary: Callable[[list[Any]], str]
    properties: Mapping[str, Any] = field(default_factory=dict)
    topology_args: Callable[[Callable[[str], str]], Mapping[str, Any]] = lambda topic: {}
    store: str | None = None  # a key-value store to read over HTTP at the end (interactive queries)


def arguments(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bootstrap", help="an existing Kafka cluster (default: the embedded dev broker)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="stop after this long (default: on Ctrl-C; 60 s when stdin is not a terminal)")
    parser.add_argument("--records-per-second", type=int, default=2_000)
    return parser.parse_args(argv)


@dataclass
class Outcome:
    rows: list[Any]  # what the query wrote
    produced: int  # sample records produced
    inputs: list[tuple[str, Record]]  # the records themselves, when asked to keep them
    store: dict[Any, Any] | None = None  # the example's store as its hosts' query endpoints answered


def run(example: Example, args: argparse.Namespace, spark: SparkSession | None = None,
        keep_inputs: bool = False) -> Outcome:
    """Run the example (on `spark` if given, which is then left running); the tests check the rows
    against the sample input."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = DevBroker()
        info = broker.start(owned=True)
        bootstrap = info.bootstrap_servers
        print(f"Kafka broker at {bootstrap}" + (" (already running)" if info.reused else ""))
    suffix = uuid.uuid4().hex[:6]

    def topic(name: str) -> str:
        return f"{name}-{suffix}"

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = {**example.inputs, **example.outputs}
    for future in admin.create_topics([NewTopic(topic(t), n, 1) for t, n in topics.items()]).values():
        future.result(timeout=30)
    del admin  # a Kafka client left alive would keep reconnecting once the broker stops at the end
    stop = threading.Event()
    produced = [0]
    kept: list[tuple[str, Record]] | None = [] if keep_inputs else None
    producer = threading.Thread(target=_produce, daemon=True,
                                args=(bootstrap, example, topic, args.records_per_second, stop, produced, kept))
    producer.start()
    own_spark = spark is None
    if spark is None:
        spark = build_session("local[2]", f"streams-rt-{example.name}")
        spark.sparkContext.setLogLevel("ERROR")
    props = {"application.id": f"{example.name}-{suffix}", "bootstrap.servers": bootstrap,
             "heartbeat.interval.ms": 1000, "session.timeout.ms": 10_000, **example.properties}
    runtime = StreamsRuntime(spark, example.topology, props, topology_args=example.topology_args(topic))
    table = f"{example.name.replace('-', '_')}_{suffix}"
    query = runtime.stream().writeStream.format("memory").queryName(table).trigger(processingTime="1 second").start()
    seconds = args.seconds if args.seconds is not None else (None if sys.stdin.isatty() else 60.0)
    print(f"running {example.name} (task hosts: {len(runtime.app.hosts)}; "
          + ("Ctrl-C stops it" if seconds is None else f"stops after {seconds:.0f} s") + ")")
    began = time.monotonic()
    loop = runtime.app.loop()
    progress_line = _Progress()
    try:
        while seconds is None or time.monotonic() - began < seconds:
            time.sleep(2.0)
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            print(progress_line.line(query, loop, runtime, produced[0], time.monotonic() - began), flush=True)
    except KeyboardInterrupt:
        print("\nstopping ...")
    finally:
        stop.set()
        producer.join()
        if query.exception() is None:
            query.processAllAvailable()  # let the last batch finish: nothing is cut short
        query.stop()
        rows = spark.sql(f"SELECT * FROM {table}").collect()
        live = _query_store(runtime, example.store) if example.store is not None else None
        loop.close()
        runtime.stop()
        if own_spark:
            spark.stop()
        if broker is not None and not info.reused:
            broker.stop()
    print(example.summary(rows))
    return Outcome(rows, produced[0], kept or [], live)


def _query_store(runtime: StreamsRuntime, store: str) -> dict[Any, Any]:
    """Every entry of `store`, read from the running hosts over HTTP (streams_rt.iq.Client, which
    asks each host for its part)."""
    endpoint = next(h.query_endpoint for h in runtime.app.hosts.values() if h.query_endpoint)
    with Client(f"http://{endpoint}", secret=runtime.app.coordinator.secret) as client:
        live = dict(client.all(store))
    print(f"queried store `{store}` over HTTP (http://{endpoint}/v1/stores/{store}/all, every host): "
          f"{len(live):,} keys")
    return live


def _produce(bootstrap: str, example: Example, topic: Callable[[str], str], rate: int, stop: threading.Event,
             produced: list[int], kept: list[tuple[str, Record]] | None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    began = time.monotonic()
    for name, (key, value, timestamp) in example.sample(topic):
        if stop.is_set():
            break
        producer.produce(name, value, key.encode() if key is not None else None, timestamp=timestamp)
        produced[0] += 1
        if kept is not None:
            kept.append((name, (key, value, timestamp)))
        producer.poll(0)
        ahead = produced[0] / rate - (time.monotonic() - began)
        if ahead > 0 and stop.wait(ahead):
            break
    producer.flush(30)


class _Progress:
    """One line every few seconds: the micro-batch, input produced and processed (records/s over
    the last interval, as the hosts count them), task states and standby lag."""

    def __init__(self) -> None:
        self.last = (time.monotonic(), 0)

    def line(self, query: Any, loop: Any, runtime: StreamsRuntime, produced: int, elapsed: float) -> str:
        progress = query.lastProgress or {}
        _, statuses = loop.status()
        phases: dict[str, int] = {}
        for status in statuses.values():
            phases[status.phase] = phases.get(status.phase, 0) + 1
        processed, lags = 0, {}
        for host in list(runtime.app.hosts.values()):
            try:
                with HostClient(str(host.endpoint), secret=runtime.app.coordinator.secret) as client:
                    status = client.status()
            except BatchError:
                continue  # a host that is going away
            processed += int(status["batches"]["records"])
            lags.update(status["standby_lag"])
        now = time.monotonic()
        rate = (processed - self.last[1]) / max(1e-6, now - self.last[0])
        self.last = (now, processed)
        return (f"{elapsed:5.0f} s  batch {progress.get('batchId', '-'):>4}  produced {produced:,}  "
                f"processed {processed:,} ({rate:,.0f} records/s)  "
                f"tasks {', '.join(f'{n} {p}' for p, n in sorted(phases.items()))}  "
                f"standby lag {sum(lags.values()):,} records ({len(lags)} standbys)")


def example_path(name: str) -> Path:
    return Path(__file__).with_name(f"{name}.py")
