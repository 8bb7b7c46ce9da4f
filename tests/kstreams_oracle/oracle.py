"""Both sides of the differential oracle: Kafka Streams' TopologyTestDriver (java/KStreamsOracle.java,
one long-lived JVM) and ours, run on the same scenario, each answering the records written to every
output topic (key, value, timestamp, in write order) and the final contents of every store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams_rt.kafka.jvm import REPO_ROOT
from streams_rt.tasks.execution.emit import EmitIntervals
from streams_rt.tasks.testing import TopologyTestDriver
from tests.kstreams_oracle.topologies import REFERENCES
from tests.protocol.harness import JavaHarnessError, KafkaJava

JAVA_SOURCE = Path(__file__).with_name("java") / "KStreamsOracle.java"
BUILD_DIR = REPO_ROOT / "build" / "kstreams-oracle"

# ("record", topic, key, value, timestamp) or ("advance", milliseconds of wall-clock time)
Event = tuple[Any, ...]


@dataclass
class Result:
    """What one side produced: output rows per topic and store rows per store, in comparable form."""

    outputs: dict[str, list[tuple[Any, ...]]]
    stores: dict[str, list[tuple[Any, ...]]]
    error: str | None = None


class KafkaStreamsOracle:
    """Kafka Streams' own TopologyTestDriver behind a JSON-lines JVM."""

    def __init__(self) -> None:
        self._java = KafkaJava(JAVA_SOURCE, BUILD_DIR)

    def topologies(self) -> list[str]:
        return list(self._java.ok("topologies")["names"])

    def run(self, topology: str, events: list[Event], caching: bool = False) -> Result:
        answer = self._java.call("run", topology=topology, caching=caching, events=[list(e) for e in events],
                                 properties=REFERENCES[topology].properties)
        if not answer["ok"]:
            if "harness" in answer["error"]:
                raise JavaHarnessError(answer["error"])
            return Result({}, {}, answer["error"])
        outputs = {topic: [tuple(row) for row in rows] for topic, rows in answer["outputs"].items()}
        stores = {name: sorted(tuple(row) for row in rows) for name, rows in answer["stores"].items()}
        return Result(outputs, stores)

    def close(self) -> None:
        self._java.close()


def run_ours(topology: str, events: list[Event], caching: bool = False) -> Result:
    """The same scenario through streams_rt's TopologyTestDriver (one partition per topic, as Kafka's)."""
    reference = REFERENCES[topology]
    driver = TopologyTestDriver(reference.build(), cache_max_bytes=10 << 20 if caching else 0,
                                emit_intervals=EmitIntervals.from_properties(reference.properties))
    try:
        for event in events:
            if event[0] == "record":
                _, topic, key, value, timestamp = event
                driver.pipe(topic, key, value, timestamp)
            else:
                driver.advance_wall_clock_time(event[1])
        outputs = {topic: [(r.key, r.value, r.timestamp) for r in driver.read_output_records(topic)]
                   for topic in reference.outputs}
        stores = {name: sorted(driver.store_rows(name)) for name in driver.topology.stores}
        return Result(outputs, stores)
    finally:
        driver.close()
