"""Hypothesis strategies for subscription and assignment content at a given version.

Sizes go past 12 and 48 entries so Kafka's internal hash tables resize; small pools of topics and
subtopologies make many entries share a topic or a group, which is what the orders depend on."""

from __future__ import annotations

from hypothesis import strategies as st

from streams_rt.protocol import (
    LATEST_SUPPORTED_VERSION,
    OFFSET_SUM_RUNNING_ACTIVE,
    OFFSET_SUM_UNKNOWN,
    AssignmentInfo,
    AssignorError,
    HostInfo,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
SMALL = st.integers(0, 40)

# UTF-8 fields (Kafka's generated message code) cannot carry lone surrogates; writeUTF and writeChars can.
utf8_text = st.text(max_size=12)
java_text = st.text(st.characters(exclude_categories=()), max_size=12)


def _numbers(small: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    return st.one_of(small, small, INT32)


def task_ids(version: int, names: st.SearchStrategy[str]) -> st.SearchStrategy[TaskId]:
    name = st.none() if version < 10 else st.one_of(st.none(), st.sampled_from(["app", "other"]), names.filter(bool))
    return st.builds(TaskId, _numbers(st.integers(0, 6)), _numbers(SMALL), name)


topics = st.one_of(st.sampled_from(["input", "orders", "clicks-repartition", "a", "b"]), java_text)
topic_partitions = st.builds(TopicPartition, topics, _numbers(SMALL))
hosts = st.builds(HostInfo, st.one_of(st.sampled_from(["localhost", "10.0.0.1"]), java_text), INT32)
partition_sets = st.lists(topic_partitions, max_size=30, unique=True).map(tuple)


@st.composite
def subscriptions(draw: st.DrawFn, version: int) -> SubscriptionInfo:
    if version <= 6:
        sums = st.sampled_from([OFFSET_SUM_RUNNING_ACTIVE, OFFSET_SUM_UNKNOWN])
    else:
        sums = st.one_of(st.integers(-4, 1000), INT64)
    return SubscriptionInfo(
        version=version,
        latest_supported_version=(
            -1 if version < 3 else draw(st.one_of(st.just(LATEST_SUPPORTED_VERSION), st.integers(version, 2**31 - 1)))
        ),
        process_id=draw(st.uuids()),
        user_endpoint=None if version < 2 else draw(st.one_of(st.none(), utf8_text.filter(bool))),
        task_offset_sums=draw(st.dictionaries(task_ids(version, utf8_text), sums, max_size=60)),
        unique_field=0 if version < 8 else draw(st.integers(-128, 127)),
        error_code=AssignorError.NONE if version < 9 else draw(st.sampled_from(AssignorError)),
        client_tags={} if version < 11 else draw(st.dictionaries(utf8_text, utf8_text, max_size=4)),
    )


@st.composite
def assignments(draw: st.DrawFn, version: int) -> AssignmentInfo:
    tasks = task_ids(version, java_text)
    return AssignmentInfo(
        version=version,
        commonly_supported_version=-1 if version < 3 else draw(INT32),
        active_tasks=draw(st.lists(tasks, max_size=20).map(tuple)),
        standby_tasks=draw(st.dictionaries(tasks, st.lists(topic_partitions, max_size=4, unique=True).map(tuple),
                                           max_size=6)),
        partitions_by_host={} if version < 2 else draw(st.dictionaries(hosts, partition_sets, max_size=4)),
        standby_partitions_by_host={} if version < 6 else draw(st.dictionaries(hosts, partition_sets, max_size=3)),
        error_code=AssignorError.NONE if version < 4 else draw(st.sampled_from(AssignorError)),
        next_rebalance_ms=2**63 - 1 if version < 7 else draw(INT64),
    )
