"""What the examples share: the embedded defaults (a local Kafka broker, shared with any other example
running, and local Spark), their topics, the streaming query, a producer of sample input started once
the query runs, where to look while it runs (the application id, the status page, the query
endpoints), a progress line (batches, records/s, task states, standby lag), and a clean stop on Ctrl-C
or, when stdin is not a terminal (CI, `make demo` in a pipeline), after a bounded run: the producer
stops, the query processes everything produced, and the summary is taken from that complete cut.
Expected failures (an unreachable broker, a missing JDK) are one line and exit code 1."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
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
from streams_rt.config import ConfigError, ConfigErrors
from streams_rt.iq import Client
from streams_rt.kafka.dev_broker import BrokerError, DevBroker
from streams_rt.kafka.jvm import JvmSetupError
from streams_rt.kafka.reachability import quiet_client_config, require_broker
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
    sample_key: str | None = None  # a key of `store` to show a lookup of


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


def script(main: Callable[[], Any]) -> None:
    """Run an example's `main` as a script: its expected failures become one `error:` line and exit
    code 1 (a traceback is for bugs)."""
    try:
        main()
    except (BrokerError, JvmSetupError, ConfigError, ConfigErrors) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # during start-up: what had started is stopped already
        print("\ninterrupted during start-up", file=sys.stderr)
        sys.exit(130)


def run(example: Example, args: argparse.Namespace, spark: SparkSession | None = None,
        keep_inputs: bool = False) -> Outcome:
    """Run the example (on `spark` if given, which is then left running); the tests check the rows
    against the sample input."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    with contextlib.ExitStack() as resources:
        bootstrap = args.bootstrap
        if bootstrap is None:
            # Shared: another example may be using the dev broker, or start after this one; whichever
            # finishes last stops it (kafka/broker_keeper.py).
            info = resources.enter_context(DevBroker().shared())
            bootstrap = info.bootstrap_servers
            print(f"Kafka broker at {bootstrap}" + (" (already running)" if info.reused else "")
                  + " (the dev broker: it stops when no example uses it)", flush=True)
        else:
            require_broker(bootstrap)
        return _run_on(example, args, bootstrap, spark, keep_inputs)


def _run_on(example: Example, args: argparse.Namespace, bootstrap: str, spark: SparkSession | None,
            keep_inputs: bool) -> Outcome:
    suffix = uuid.uuid4().hex[:6]

    def topic(name: str) -> str:
        return f"{name}-{suffix}"

    admin = AdminClient({"bootstrap.servers": bootstrap, **quiet_client_config()})  # failures: the futures'
    topics = {**example.inputs, **example.outputs}
    for future in admin.create_topics([NewTopic(topic(t), n, 1) for t, n in topics.items()]).values():
        future.result(timeout=30)
    del admin  # a Kafka client left alive would keep reconnecting once the broker stops at the end
    with contextlib.ExitStack() as cleanup:  # undone in reverse, however the run ends
        if spark is None:
            print("starting Spark (local[2]) ...", flush=True)
            spark = build_session("local[2]", f"streams-rt-{example.name}")
            cleanup.callback(spark.stop)
            spark.sparkContext.setLogLevel("ERROR")
        if _main_thread():
            # pyspark's SIGINT handler cancels every Spark job, the running micro-batch's too, which
            # fails the query: here Ctrl-C only raises KeyboardInterrupt, and the query stops itself.
            cleanup.callback(signal.signal, signal.SIGINT, signal.signal(signal.SIGINT, signal.default_int_handler))
        props = {"application.id": f"{example.name}-{suffix}", "bootstrap.servers": bootstrap,
                 "heartbeat.interval.ms": 1000, "session.timeout.ms": 10_000, **example.properties}
        runtime = StreamsRuntime(spark, example.topology, props, topology_args=example.topology_args(topic))
        cleanup.callback(runtime.stop)
        loop = runtime.app.loop()
        cleanup.callback(loop.close)
        table = f"{example.name.replace('-', '_')}_{suffix}"
        query = (runtime.stream().writeStream.format("memory").queryName(table)
                 .trigger(processingTime="1 second").start())
        cleanup.callback(lambda: query.stop() if query.isActive else None)
        _print_where_to_look(runtime, example, topic)
        produced = [0]
        progress = _Progress(query, loop, runtime, produced, time.monotonic())
        # The sample input starts once the query is up (every task running, Spark's source answering):
        # a backlog produced during start-up would make the first micro-batch long, with nothing to
        # show for it meanwhile.
        runtime.app.wait_until_running(loop)
        while query.lastProgress is None and query.status["message"] != "Waiting for data to arrive":
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            time.sleep(2.0)
            print(progress.line(), flush=True)
        stop = threading.Event()
        kept: list[tuple[str, Record]] | None = [] if keep_inputs else None
        producer = threading.Thread(target=_produce, daemon=True,
                                    args=(bootstrap, example, topic, args.records_per_second, stop, produced, kept))
        producer.start()
        cleanup.callback(producer.join)
        cleanup.callback(stop.set)
        seconds = args.seconds if args.seconds is not None else (None if sys.stdin.isatty() else 60.0)
        print(f"running {example.name}: producing {args.records_per_second:,} records/s; "
              + ("Ctrl-C stops it" if seconds is None else f"stops after {seconds:.0f} s"), flush=True)
        began = time.monotonic()
        try:
            while seconds is None or time.monotonic() - began < seconds:
                time.sleep(2.0)
                if query.exception() is not None:
                    raise RuntimeError(f"the query failed: {query.exception()}")
                print(progress.line(), flush=True)
        except KeyboardInterrupt:
            print("\nCtrl-C: stopping cleanly", flush=True)
        # A second Ctrl-C must not cut the clean stop short (a half-closed query and hosts are what
        # the first one avoids): it is answered, not obeyed.
        if _main_thread():
            cleanup.callback(signal.signal, signal.SIGINT, signal.signal(signal.SIGINT, _still_stopping))
        stop.set()
        producer.join()
        _finish(query, progress, produced[0])
        query.stop()
        rows = spark.sql(f"SELECT * FROM {table}").collect()
        live = _query_store(runtime, example.store) if example.store is not None else None
        print("stopping the task hosts", flush=True)
    print(example.summary(rows), flush=True)
    return Outcome(rows, produced[0], kept or [], live)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _still_stopping(signum: int, frame: object) -> None:
    print("still stopping: the query is finishing what was produced, then the task hosts close "
          "(Ctrl-\\ quits at once, losing that)", flush=True)


def _finish(query: Any, progress: _Progress, produced: int) -> None:
    """Let the query process everything produced (processAllAvailable), showing progress meanwhile:
    the summary then comes from a complete, consistent cut of the input."""
    print(f"finishing: the query processes the rest of the {produced:,} records produced", flush=True)
    done = threading.Thread(target=query.processAllAvailable, name="finish", daemon=True)
    done.start()
    while done.is_alive():
        done.join(2.0)
        if done.is_alive():
            print(progress.line(), flush=True)


def _print_where_to_look(runtime: StreamsRuntime, example: Example, topic: Callable[[str], str]) -> None:
    """What a user can query and watch while the example runs."""
    app = runtime.application_id
    hosts = sorted(runtime.app.hosts.values(), key=lambda h: h.name)
    print(f"application {app}: {len(hosts)} task hosts (pids {', '.join(str(h.proc.pid) for h in hosts)}), "
          f"input {', '.join(topic(t) for t in example.inputs)}, output {', '.join(topic(t) for t in example.outputs)}")
    print(f"  status:      streams-rt status -a {app}"
          + (f"   (page {runtime.app.coordinator.http_url}/)" if runtime.app.coordinator.http_url else ""))
    endpoints = [e for h in hosts if (e := h.query_endpoint)]
    if endpoints:
        print(f"  query state: {', '.join(f'http://{e}' for e in endpoints)}")
        if example.store is not None and example.sample_key is not None:
            print(f"               curl http://{endpoints[0]}/v1/stores/{example.store}/keys/{example.sample_key}"
                  f"   or   streams-rt query {example.store} {example.sample_key} --url http://{endpoints[0]}")
    sys.stdout.flush()


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

    def __init__(self, query: Any, loop: Any, runtime: StreamsRuntime, produced: list[int], began: float) -> None:
        self.query, self.loop, self.runtime, self.produced, self.began = query, loop, runtime, produced, began
        self.last = (time.monotonic(), 0)

    def line(self) -> str:
        progress = self.query.lastProgress or {}
        _, statuses = self.loop.status()
        phases: dict[str, int] = {}
        for status in statuses.values():
            phases[status.phase] = phases.get(status.phase, 0) + 1
        processed, lags = 0, {}
        for host in list(self.runtime.app.hosts.values()):
            try:
                with HostClient(str(host.endpoint), secret=self.runtime.app.coordinator.secret) as client:
                    status = client.status()
            except BatchError:
                continue  # a host that is going away
            processed += int(status["batches"]["records"])
            lags.update(status["standby_lag"])
        now = time.monotonic()
        rate = (processed - self.last[1]) / max(1e-6, now - self.last[0])
        self.last = (now, processed)
        batch = progress.get("batchId")
        return (f"{now - self.began:5.0f} s  "
                + (f"batch {batch:>4}" if batch is not None else "starting the query (Spark starts its Python "
                   "workers)")
                + f"  produced {self.produced[0]:,}  processed {processed:,} ({rate:,.0f} records/s)  "
                f"tasks {', '.join(f'{n} {p}' for p, n in sorted(phases.items()))}  "
                f"standby lag {sum(lags.values()):,} records ({len(lags)} standbys)")


def example_path(name: str) -> Path:
    return Path(__file__).with_name(f"{name}.py")
