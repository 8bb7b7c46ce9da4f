"""What the dev broker tests share: running the CLI as a user would, and talking to the broker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`streams-rt dev-broker <args>` in a fresh Python process."""
    return subprocess.run([sys.executable, "-m", "streams_rt.cli", "dev-broker", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=env if env is not None else dict(os.environ))


def assert_one_error_line(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    """The command failed with exactly one `Error: ...` line holding every `expected` text."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    """Create `name` and wait until the broker's metadata has a leader for each partition: the
    create's answer comes first, and a describe made at once may still say UNKNOWN_TOPIC_OR_PART."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
    deadline = time.monotonic() + 30
    while True:
        found = admin.list_topics(name, timeout=10).topics.get(name)
        if found is not None and found.error is None and len(found.partitions) == partitions \
                and all(p.leader >= 0 for p in found.partitions.values()):
            return
        assert time.monotonic() < deadline, f"topic {name} has no leader for every partition after 30 s"
        time.sleep(0.05)


def topics(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)


def round_trip(bootstrap: str, topic: str, count: int, compression: str = "none") -> list[bytes]:
    """Produce `count` records to partition 0 of `topic` and read back every value there."""
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": compression})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        for message in consumer.consume(num_messages=500, timeout=1.0):
            value = message.value()
            assert message.error() is None and value is not None, message.error()
            values.append(value)
    consumer.close()
    return values


def alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return ") Z " not in stat.read_text()
    except OSError:
        return False


def free_port() -> int:
    """A loopback port nobody listens on (a connection there is refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
