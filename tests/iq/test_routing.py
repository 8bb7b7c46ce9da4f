"""Key routing without services: Kafka's partitioner bit for bit against the real Java client (one
JVM, many keys), keys from URL text through each serde, and the group view's owners."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams_rt.iq.codec import KeyRejected, decode_base64url, encode_base64url, key_bytes, to_json
from streams_rt.iq.routing import GroupView, store_catalog
from streams_rt.kafka.jvm import REPO_ROOT, compile_java, find_java
from streams_rt.kafka.partitioner import murmur2, partition_for
from streams_rt.protocol import HostInfo, TaskId, TopicPartition
from streams_rt.topology import Serdes, StreamsBuilder
from streams_rt.topology.joins import JoinWindows
from streams_rt.topology.serdes import Serde
from streams_rt.topology.windows import SessionWindows
from tests.iq.topologies import page_views


@pytest.mark.jvm
def test_murmur2_and_the_partition_match_the_java_client() -> None:
    rng = random.Random(7)
    keys = [b"", b"a", b"ab", b"abc", b"abcd", "ü日本".encode(), bytes(range(256))]
    keys += [rng.randbytes(rng.randrange(0, 64)) for _ in range(3_000)]
    keys += [Serdes.int64().serialize(n) or b"" for n in (0, -1, 2**63 - 1, -(2**63), 12345)]
    counts = [rng.choice([1, 2, 3, 7, 12, 100, 2**31 - 1]) for _ in keys]
    classpath = compile_java([Path(__file__).with_name("Murmur2Partitions.java")], REPO_ROOT / "build" / "murmur2")
    lines = "".join(f"{k.hex() or '-'} {n}\n" for k, n in zip(keys, counts, strict=True))
    done = subprocess.run([find_java(), "-cp", classpath, "Murmur2Partitions"], input=lines, capture_output=True,
                          text=True, timeout=120, check=True)
    java = [tuple(map(int, line.split())) for line in done.stdout.splitlines()]
    ours = [(murmur2(k), partition_for(k, n)) for k, n in zip(keys, counts, strict=True)]
    assert len(java) == len(keys)
    assert ours == java


@pytest.mark.parametrize(("serde", "text", "expected"), [
    (Serdes.string(), "/a b", b"/a b"),
    (Serdes.int64(), "-5", (-5).to_bytes(8, "big", signed=True)),
    (Serdes.int32(), "7", (7).to_bytes(4, "big", signed=True)),
    (Serdes.json(), '{"a":1}', Serdes.json().serialize({"a": 1})),
    (Serdes.bytes(), encode_base64url(b"\x00\xff"), b"\x00\xff"),
])
def test_a_key_text_becomes_the_bytes_its_serde_writes(serde: Serde[Any], text: str, expected: bytes) -> None:
    assert key_bytes(serde, text) == expected


@pytest.mark.parametrize(("serde", "text"), [
    (Serdes.int64(), "five"), (Serdes.int64(), str(2**63)), (Serdes.int32(), str(2**31)),
    (Serdes.json(), "{not json"), (Serdes.bytes(), "***"), (Serdes.int64(), ""),
])
def test_a_key_its_serde_cannot_write_is_rejected_with_the_reason(serde: Serde[Any], text: str) -> None:
    with pytest.raises(KeyRejected, match="serde|base64url"):
        key_bytes(serde, text)


@given(st.binary(max_size=64))
def test_base64url_round_trips(data: bytes) -> None:
    assert decode_base64url(encode_base64url(data), "key") == data


def test_values_become_json_and_unreadable_bytes_say_so() -> None:
    assert to_json(Serdes.int64(), (3).to_bytes(8, "big")) == 3
    assert to_json(Serdes.bytes(), b"\xff") == "_w"
    assert to_json(Serdes.int64(), b"\x01") == {"undecodable": "AQ"}


def test_the_group_view_names_each_tasks_active_and_standby_hosts() -> None:
    topology = page_views("-t")
    layout = topology.layout("app", {"iq-views-t": 3})
    catalog = store_catalog(topology, layout)
    assert {n: (s.subtopology, s.partitions, s.windowed) for n, s in catalog.items()} == {
        "by-length": (1, 3, False), "page-counts": (0, 3, False), "page-sessions": (0, 3, True),
        "page-windows": (0, 3, True)}
    a, b = HostInfo("h", 1), HostInfo("h", 2)
    view = GroupView(layout, 4,
                     {a: (TopicPartition("iq-views-t", 0), TopicPartition("app-lengths-repartition", 1)),
                      b: (TopicPartition("iq-views-t", 1),)},
                     {b: (TopicPartition("iq-views-t", 0),)})
    assert view.owners(TaskId(0, 0)).active == "h:1" and view.owners(TaskId(0, 0)).standbys == ("h:2",)
    assert view.owners(TaskId(1, 1)).active == "h:1"
    assert view.owners(TaskId(0, 2)).active is None  # between owners
    described = view.describe()
    assert described["generation"] == 4
    assert [h["active_tasks"] for h in described["hosts"]] == [["0_0", "1_1"], ["0_1"]]
    assert catalog["page-counts"].task_for(b"/x") == TaskId(0, partition_for(b"/x", 3))


def test_session_stores_are_listed_as_such_and_a_joins_held_records_are_not_queryable() -> None:
    s = Serdes.string()
    b = StreamsBuilder()
    clicks, views = b.stream("clicks", s, s), b.stream("views", s, s)
    clicks.group_by_key().windowed_by(SessionWindows(5)).count("sessions")
    clicks.left_join(views, lambda c, v: f"{c}/{v}", JoinWindows.of_time_difference_with_no_grace(10),
                     store_name="joined").to("out")
    topology = b.build()
    catalog = store_catalog(topology, topology.layout("app", {"clicks": 2, "views": 2}))
    assert {n: s.kind for n, s in catalog.items()} == {
        "joined-this-join-store": "window", "joined-outer-other-join-store": "window", "sessions": "session"}
    assert catalog["sessions"].describe()["kind"] == "session"
