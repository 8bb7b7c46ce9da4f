"""The end offsets of many partitions in one request, retried while new topics settle: the last
stable offset (what a read_committed consumer can read) or the high watermark (which also counts
records of transactions whose markers are not written yet)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import IsolationLevel, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from streams_rt.kafka.watermarks import RETRIABLE, broker_outage
from streams_rt.protocol import TopicPartition

# librdkafka's list_offsets answers _NOENT ("Failed to query partition leaders: No leaders found")
# while a topic created a moment ago has no leader in the client's cached metadata, and the broker
# UNKNOWN_LEADER_EPOCH while its new leader's epoch has not reached it: the same "settling" case,
# except that the client's cache is refreshed only when asked for (below). After a broker restart
# the cached leader epoch is older than the broker's (FENCED_LEADER_EPOCH) until that refresh. A
# leader elected a moment ago answers OFFSET_NOT_AVAILABLE until its high watermark has caught up
# (retriable in Kafka's protocol; seen when a broker of three was killed).
LIST_OFFSETS_RETRIABLE = RETRIABLE | {KafkaError._NOENT, KafkaError.UNKNOWN_LEADER_EPOCH,
                                      KafkaError.FENCED_LEADER_EPOCH, KafkaError.OFFSET_NOT_AVAILABLE}
# Each attempt's own timeout: a request to a broker that died waits out its whole timeout (no error
# comes back), so one long attempt kept the caller waiting 10 s after a leader had moved elsewhere.
ATTEMPT_S = 2.0


class BrokerUnreachable(RuntimeError):
    """The broker did not answer within the call's timeout (down or restarting, or the partitions'
    leaders still unknown): a later call may succeed. `error` is the last KafkaError seen."""

    def __init__(self, what: str, timeout_s: float, error: KafkaError) -> None:
        self.error = error
        super().__init__(f"{what}: the broker did not answer within {timeout_s:.0f} s ({error.str()})")


def end_offsets(admin: AdminClient, partitions: Iterable[TopicPartition], timeout_s: float = 30.0,
                read_committed: bool = True) -> dict[TopicPartition, int]:
    """Raises BrokerUnreachable when the broker (or the partitions' leaders) stays out of reach for
    `timeout_s`, KafkaException for any other error."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    deadline = time.monotonic() + timeout_s
    while True:
        futures = admin.list_offsets({KafkaTopicPartition(tp.topic, tp.partition): OffsetSpec.latest()
                                      for tp in wanted},
                                     isolation_level=IsolationLevel.READ_COMMITTED if read_committed
                                     else IsolationLevel.READ_UNCOMMITTED,
                                     request_timeout=max(0.5, min(ATTEMPT_S, deadline - time.monotonic())))
        answer = _offsets_or_error(futures)
        del futures
        if not isinstance(answer, KafkaError):
            return answer
        error = answer
        if error.code() not in LIST_OFFSETS_RETRIABLE and not broker_outage(error):
            raise KafkaException(error)
        if time.monotonic() > deadline:
            raise BrokerUnreachable(f"end offsets of {len(wanted)} partitions", timeout_s, error)
        time.sleep(0.1 if not broker_outage(error) else 0.5)
        try:  # a metadata request: fresh leaders
            admin.list_topics(timeout=max(1.0, min(5.0, deadline - time.monotonic())))
        except KafkaException as refresh:
            if not broker_outage(refresh.args[0]):
                raise


def _offsets_or_error(futures: Mapping[KafkaTopicPartition, Future[Any]]) -> dict[TopicPartition, int] | KafkaError:
    """The offsets, or the first KafkaError. The futures' exceptions are read, not raised, and lose
    their tracebacks: through the client's callback the futures and a raised exception's frames form a
    cycle the collector cannot see, which kept the client (and its reconnects to a gone broker) alive.
    A partition answered without an offset (-1001: its leadership moving, after one broker of several
    stopped) is a leader not available, to be asked again."""
    for future in futures.values():
        error = future.exception()
        if error is not None:
            error.__traceback__ = None
            if isinstance(error, KafkaException):
                return error.args[0]  # type: ignore[no-any-return]
            raise error
    found = {TopicPartition(k.topic, k.partition): f.result().offset for k, f in futures.items()}
    unknown = [tp for tp, offset in found.items() if offset < 0]
    if unknown:
        return KafkaError(KafkaError.LEADER_NOT_AVAILABLE, f"no end offset for {', '.join(map(str, unknown[:3]))}"
                          + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""))
    return found


def committed_or_earliest(admin: AdminClient, group: str, partitions: Iterable[TopicPartition],
                          timeout_s: float = 30.0) -> dict[TopicPartition, int]:
    """Each partition's offset committed for consumer group `group`, or its beginning when none is."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = [ConsumerGroupTopicPartitions(group, [KafkaTopicPartition(tp.topic, tp.partition) for tp in wanted])]
    (future,) = admin.list_consumer_group_offsets(request, request_timeout=timeout_s).values()
    found = {TopicPartition(k.topic, k.partition): k.offset for k in future.result().topic_partitions if k.offset >= 0}
    missing = [tp for tp in wanted if tp not in found]
    if missing:
        futures = admin.list_offsets({KafkaTopicPartition(tp.topic, tp.partition): OffsetSpec.earliest()
                                      for tp in missing},
                                     request_timeout=timeout_s)
        found.update({TopicPartition(k.topic, k.partition): f.result().offset for k, f in futures.items()})
    return found
