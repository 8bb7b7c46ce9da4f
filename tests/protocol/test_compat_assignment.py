"""AssignmentInfo against Kafka's own class (kafka-streams jar), every version, both directions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import pytest
from hypothesis import given

from streams_rt.protocol import (
    AssignmentInfo,
    HostInfo,
    TopicPartition,
    decode_assignment,
)
from tests.protocol.harness import COMPAT, KafkaJava, assignment_request, task_from_json
from tests.protocol.samples import VERSIONS
from tests.protocol.strategies import assignments

pytestmark = pytest.mark.jvm

K = TypeVar("K")


def _partitions(entries: list[Any]) -> frozenset[TopicPartition]:
    """[[topic, partition], ...] as the harness's JSON has them."""
    return frozenset(TopicPartition(topic, p) for topic, p in entries)


def _host_map(entries: list[Any]) -> dict[HostInfo, frozenset[TopicPartition]]:
    return {HostInfo(h, port): _partitions(tps) for (h, port), tps in entries}


def _as_sets(mapping: Mapping[K, Iterable[TopicPartition]]) -> dict[K, frozenset[TopicPartition]]:
    return {k: frozenset(v) for k, v in mapping.items()}


@pytest.mark.parametrize("version", VERSIONS)
def test_python_encodes_kafka_decodes(kafka_java: KafkaJava, version: int) -> None:
    @COMPAT
    @given(info=assignments(version))
    def check(info: AssignmentInfo) -> None:
        seen = kafka_java.ok("asg_decode", hex=info.encode().hex())
        assert (seen["version"], seen["commonly"]) == (version, info.commonly_supported_version)
        assert [task_from_json(t) for t in seen["active"]] == list(info.active_tasks)
        assert {task_from_json(t): _partitions(tps) for t, tps in seen["standby"]} == _as_sets(info.standby_tasks)
        assert _host_map(seen["byHost"]) == _as_sets(info.partitions_by_host)
        assert _host_map(seen["standbyByHost"]) == _as_sets(info.standby_partitions_by_host)
        assert (seen["error"], seen["nextRebalance"]) == (info.error_code, info.next_rebalance_ms)
        # Kafka re-encodes from its HashMaps, in its own order: we must read that and write it back unchanged.
        kafka_bytes = bytes.fromhex(seen["reencoded"])
        again = decode_assignment(kafka_bytes)
        assert _as_sets(again.partitions_by_host) == _as_sets(info.partitions_by_host)
        assert again.encode() == kafka_bytes

    check()


@pytest.mark.parametrize("version", VERSIONS)
def test_kafka_encodes_python_decodes(kafka_java: KafkaJava, version: int) -> None:
    @COMPAT
    @given(info=assignments(version))
    def check(info: AssignmentInfo) -> None:
        kafka_bytes = bytes.fromhex(kafka_java.ok("asg_encode", **assignment_request(info))["hex"])
        assert decode_assignment(kafka_bytes) == info
        # Same content in the same order: byte for byte what Kafka writes, topic dictionary included.
        assert info.encode() == kafka_bytes

    check()
