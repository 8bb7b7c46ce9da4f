"""Reads exactly a batch's offset ranges from the input topics: assign and seek, never a consumer
group, committed records only, and nothing at or beyond a range's end."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from streams_rt.protocol import TopicPartition

log = logging.getLogger(__name__)

CONSUME_BATCH = 10_000


class InputUnavailable(Exception):
    """The range could not be read (broker down, no progress); retriable."""


def input_consumer(bootstrap_servers: str, group_id: str, extra: Mapping[str, Any] | None = None) -> Consumer:
    """A consumer for batch ranges. `group.id` is the application's (offsets are committed for it,
    never a subscription); EOF events mark where a partition's data ends."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "fetch.queue.backoff.ms": 10,
        "fetch.wait.max.ms": 50,
        "queued.max.messages.kbytes": 32 << 10,
        **(extra or {}),
    }
    return Consumer(conf)


def read_ranges(consumer: Consumer, ranges: Mapping[TopicPartition, tuple[int, int]],
                timeout_s: float = 30.0) -> dict[TopicPartition, list[Message]]:
    """The records of each [start, end) range, in offset order. A range ends at its end offset, or
    earlier at the partition's end (transaction markers take offsets too). Raises InputUnavailable
    after `timeout_s` without progress."""
    found: dict[TopicPartition, list[Message]] = {tp: [] for tp in ranges}
    pending = {tp: (start, end) for tp, (start, end) in ranges.items() if start < end}
    if not pending:
        return found
    consumer.assign([KafkaTopicPartition(tp.topic, tp.partition, start) for tp, (start, _) in pending.items()])
    deadline = time.monotonic() + timeout_s
    try:
        while pending:
            messages = consumer.consume(CONSUME_BATCH, 0.2)
            if not messages:
                if time.monotonic() > deadline:
                    raise InputUnavailable(f"no progress reading {_describe(pending)} for {timeout_s:.0f} s")
                continue
            deadline = time.monotonic() + timeout_s
            for message in messages:
                error = message.error()
                tp = TopicPartition(message.topic() or "", message.partition() or 0)
                if tp not in pending:
                    continue
                end = pending[tp][1]
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise InputUnavailable(f"reading {tp} failed: {error}")
                    if (message.offset() or 0) >= end:
                        del pending[tp]  # the range ends in transaction markers: no record carries `end - 1`
                    continue
                offset = message.offset() or 0
                if offset >= end:
                    del pending[tp]
                    continue
                records = found[tp]
                if not records and offset > pending[tp][0]:
                    log.warning("%s: records from %d to %d are gone from the topic (retention?); reading from %d",
                                tp, pending[tp][0], offset - 1, offset)
                records.append(message)
                if offset + 1 >= end:
                    del pending[tp]
    finally:
        consumer.unassign()
    return found


def _describe(pending: Mapping[TopicPartition, tuple[int, int]]) -> str:
    return ", ".join(f"{tp}[{s}, {e})" for tp, (s, e) in sorted(pending.items()))
