"""SubscriptionInfo against Kafka's own class (kafka-streams jar), every version, both directions."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given

from streams_rt.protocol import (
    EARLIEST_PROBEABLE_VERSION,
    LATEST_SUPPORTED_VERSION,
    FutureSubscriptionInfo,
    SubscriptionInfo,
    decode_subscription,
)
from tests.protocol.harness import COMPAT, KafkaJava, subscription_request, task_from_json
from tests.protocol.samples import VERSIONS
from tests.protocol.strategies import subscriptions

pytestmark = pytest.mark.jvm


def test_kafka_jar_supports_the_same_versions(kafka_java: KafkaJava) -> None:
    versions = kafka_java.ok("latest_supported_version")
    assert (versions["latest"], versions["earliestProbeable"]) == (LATEST_SUPPORTED_VERSION, EARLIEST_PROBEABLE_VERSION)


@pytest.mark.parametrize("version", VERSIONS)
def test_python_encodes_kafka_decodes(kafka_java: KafkaJava, version: int) -> None:
    @COMPAT
    @given(info=subscriptions(version))
    def check(info: SubscriptionInfo) -> None:
        encoded = info.encode()
        seen = kafka_java.ok("sub_decode", hex=encoded.hex())
        assert (seen["version"], seen["latest"], seen["future"]) == (version, info.latest_supported_version, False)
        assert seen["processId"] == str(info.process_id)
        assert seen["endpoint"] == info.user_endpoint
        assert {task_from_json(t): s for t, s in seen["sums"]} == info.task_offset_sums
        assert {task_from_json(t) for t in seen["prev"]} == info.prev_tasks
        assert {task_from_json(t) for t in seen["standby"]} == info.standby_tasks
        assert (seen["unique"], seen["error"]) == (info.unique_field, info.error_code)
        assert dict(seen["tags"]) == info.client_tags
        # Kafka keeps the decoded message as read, so its re-encoding must give our bytes back.
        assert bytes.fromhex(seen["reencoded"]) == encoded

    check()


@pytest.mark.parametrize("version", VERSIONS)
def test_kafka_encodes_python_decodes(kafka_java: KafkaJava, version: int) -> None:
    @COMPAT
    @given(info=subscriptions(version))
    def check(info: SubscriptionInfo) -> None:
        kafka_bytes = bytes.fromhex(kafka_java.ok("sub_encode", **subscription_request(info))["hex"])
        assert decode_subscription(kafka_bytes) == info
        # Same content in the same map order: byte for byte what Kafka's constructor and encoder write.
        assert info.encode() == kafka_bytes

    check()


@pytest.mark.parametrize("version", [12, 13, 2**31 - 1])
def test_future_subscription_reads_as_version_probe_in_both(kafka_java: KafkaJava, version: int) -> None:
    newer = SubscriptionInfo.for_version(11, uuid.UUID(int=7), latest_supported_version=version)
    data = version.to_bytes(4, "big") + newer.encode()[4:] + b"fields of a future version"
    seen = kafka_java.ok("sub_decode", hex=data.hex())
    assert (seen["future"], seen["version"], seen["latest"]) == (True, version, version)
    assert decode_subscription(data) == FutureSubscriptionInfo(version, version)
