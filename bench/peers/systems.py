"""The systems `make bench-peers` compares, each as the command lines that start it on the workload
(two cores' worth of parallelism each) and the versions it runs."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APPS = REPO / "bench" / "peers" / "apps"
KSTREAMS_BUILD = REPO / "build" / "peers-kstreams"
KAFKA_STREAMS_VERSION = "4.1.1"  # bench/peers/kstreams/pom.xml
QUIET_JAVA = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"  # Kafka's INFO lines would flood the logs
QUIX_PYTHON = REPO / "build" / "peers-quix" / "bin" / "python"  # its own venv: see pyproject.toml's `bench`


@dataclass(frozen=True)
class Run:
    """Where one system runs: the broker, its input and output topics, a scratch directory, and how
    many records it may take per batch (micro-batch systems)."""

    bootstrap: str
    source: str
    sink: str
    work: Path
    batch_records: int


@dataclass(frozen=True)
class System:
    """`share`: the system reads only the first 1/share of the records (same keys, same order) when it
    is too slow to read them all in the time a run has; its throughput is then over that prefix."""

    name: str
    version: Callable[[], str]
    commands: Callable[[Run], list[list[str]]]
    share: int = 1


def restarts_note(run: Run) -> str:
    """', query restarted N times' when streams_rt's bench app had to start its query again (see
    bench/peers/apps/streams_rt_app.py), else ''."""
    restarts = run.work / "query-restarts"
    return f", query restarted {restarts.read_text()} times" if restarts.exists() else ""


def environment() -> dict[str, str]:
    """The systems' environment: ours, with the repository importable (the apps and the task hosts
    import bench.peers.apps.* by name)."""
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _streams_rt(run: Run) -> list[list[str]]:
    return [[sys.executable, str(APPS / "streams_rt_app.py"), run.bootstrap, run.source, run.sink, str(run.work),
             str(max(1, run.batch_records // 4))]]


def _kafka_streams(run: Run) -> list[list[str]]:
    classpath = f"{KSTREAMS_BUILD / 'peers-kstreams-1.jar'}:{KSTREAMS_BUILD / 'libs'}/*"
    return [["java", "-Xmx1g", QUIET_JAVA, "-cp", classpath, "peers.CountSum", run.bootstrap, run.source, run.sink,
             f"peers-kstreams-{uuid.uuid4().hex[:6]}", str(run.work / "state"), "2", "0"]]


def _quix(run: Run) -> list[list[str]]:
    group = f"peers-quix-{uuid.uuid4().hex[:6]}"
    return [[str(QUIX_PYTHON), str(APPS / "quix_app.py"), run.bootstrap, run.source, run.sink,
             str(run.work / f"state-{i}"), group] for i in range(2)]


def _spark(flavour: str) -> Callable[[Run], list[list[str]]]:
    def commands(run: Run) -> list[list[str]]:
        return [[sys.executable, str(APPS / "spark_apps.py"), flavour, run.bootstrap, run.source, run.sink,
                 str(run.work), str(run.batch_records)]]
    return commands


def _package(name: str) -> Callable[[], str]:
    return lambda: importlib.metadata.version(name)


def _quix_version() -> str:
    code = "import importlib.metadata as m; print(m.version('quixstreams'))"
    return subprocess.run([str(QUIX_PYTHON), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def _spark_version() -> str:
    """pyspark's version and that of the Kafka connector `make bench-peers` resolved."""
    connector = sorted((REPO / "build" / "peers-spark-kafka" / "libs").glob("spark-sql-kafka-*.jar"))
    name = connector[0].stem.rsplit("-", 1)[-1] if connector else "missing"
    return f"pyspark {_package('pyspark')()}, spark-sql-kafka {name}"


def _java() -> str:
    out = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    return out.splitlines()[0].split('"')[1] if '"' in out else "?"


SYSTEMS = [
    System("streams_rt", lambda: f"{_package('streams-rt')()} (pyspark {_package('pyspark')()})", _streams_rt),
    System("Kafka Streams", lambda: f"{KAFKA_STREAMS_VERSION} (Java {_java()})", _kafka_streams),
    System("Spark SQL groupBy().agg()", _spark_version, _spark("sql")),
    # One pandas call and state-server round trips per key and batch: ~100x slower than the others here.
    System("Spark transformWithStateInPandas", _spark_version, _spark("python"),
           share=50),
    System("Quix Streams", _quix_version, _quix),
]
