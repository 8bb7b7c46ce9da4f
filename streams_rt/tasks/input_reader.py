"""Reads exactly a batch's offset ranges from the input topics: assign and seek, never a consumer
group, committed records only, and nothing at or beyond a range's end."""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from streams_rt.kafka.records import offsets as record_offsets
from streams_rt.protocol import TopicPartition

log = logging.getLogger(__name__)

CONSUME_BATCH = 10_000
CHUNK_RECORDS = 20_000  # a batch is processed in chunks of about this many records: memory stays flat


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
        # A task reads its batch in chunks, so a small prefetch keeps it busy; a host has one of
        # these per active task, and this bounds their memory.
        "queued.max.messages.kbytes": 8 << 10,
        **(extra or {}),
    }
    return Consumer(conf)


class InputReader:
    """A task's reader of its batch ranges. Its partitions stay assigned between batches, so the next
    batch's records are already being fetched, and what one batch read past its end is kept for the
    next; it seeks only when a batch does not start where the last one ended."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self._next: dict[TopicPartition, int] = {}  # where the partition's fetch position is
        self._held: dict[TopicPartition, list[Message]] = {}  # read past the last batch's end
        # The partition's end as its last EOF event gave it: every committed record below it has
        # been delivered. An EOF can arrive in the same poll as a batch's last record, after the
        # batch ended; a later range below it that holds no record (transaction markers only)
        # must then end at once, not wait for an event that already came.
        self._eof: dict[TopicPartition, int] = {}

    def read(self, ranges: Mapping[TopicPartition, tuple[int, int]], chunk_records: int = CHUNK_RECORDS,
             timeout_s: float = 30.0) -> Iterator[dict[TopicPartition, list[Message]]]:
        """The records of each [start, end) range, in offset order, in chunks of about
        `chunk_records` (a batch need not be held in memory whole). A range ends at its end offset,
        or earlier at the partition's end (transaction markers take offsets too). Raises
        InputUnavailable after `timeout_s` without progress."""
        self._seen: set[TopicPartition] = set()
        found: dict[TopicPartition, list[Message]] = {tp: [] for tp in ranges}
        pending: dict[TopicPartition, tuple[int, int]] = {}
        for tp, (start, end) in ranges.items():
            held = self._held.pop(tp, [])
            if self._next.get(tp) != start:
                self._position(tp, start)
                held = []
            elif held and (held[0].offset() or 0) < start:
                held = []  # never: what is held was read at or past where the last batch ended
            taken = [m for m in held if (m.offset() or 0) < end]
            if len(taken) < len(held):
                self._held[tp] = held[len(taken):]
            found[tp] = taken
            if taken:
                self._seen.add(tp)
            self._next[tp] = end
            next_offset = (taken[-1].offset() or 0) + 1 if taken else start
            if next_offset < end and len(taken) == len(held) and self._eof.get(tp, -1) < end:
                pending[tp] = (next_offset, end)
        yield from self._consume(pending, found, chunk_records, timeout_s)

    def _position(self, tp: TopicPartition, offset: int) -> None:
        partition = KafkaTopicPartition(tp.topic, tp.partition, offset)
        self._eof.pop(tp, None)  # what was delivered before the seek is not kept
        if tp in self._next:
            self.consumer.incremental_unassign([partition])
        self.consumer.incremental_assign([partition])

    def _consume(self, pending: dict[TopicPartition, tuple[int, int]], found: dict[TopicPartition, list[Message]],
                 chunk_records: int, timeout_s: float) -> Iterator[dict[TopicPartition, list[Message]]]:
        deadline = time.monotonic() + timeout_s
        while pending:
            if sum(map(len, found.values())) >= chunk_records:
                yield found
                found = {tp: [] for tp in found}
            # consume() returns once it has that many messages or its timeout passed: asking for
            # more than the ranges hold would wait out the timeout at every batch's end.
            wanted = min(CONSUME_BATCH, max(1, sum(end - start for start, end in pending.values())))
            messages = self.consumer.consume(wanted, 0.2)
            if not messages:
                if time.monotonic() > deadline:
                    raise InputUnavailable(f"no progress reading {_describe(pending)} for {timeout_s:.0f} s")
                continue
            deadline = time.monotonic() + timeout_s
            if len(self._next) == 1 and not any(map(Message.error, messages)):
                self._take_run(messages, pending, found)  # one partition assigned: no per-record work
                continue
            for message in messages:
                error = message.error()
                tp = TopicPartition(message.topic() or "", message.partition() or 0)
                offset = message.offset() or 0
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise InputUnavailable(f"reading {tp} failed: {error}")
                    self._eof[tp] = max(offset, self._eof.get(tp, -1))
                    if tp in pending and offset >= pending[tp][1]:
                        del pending[tp]  # the range ends in transaction markers: no record carries `end - 1`
                    continue
                if tp not in pending:
                    if tp in self._next and offset >= self._next[tp]:
                        self._held.setdefault(tp, []).append(message)  # the next batch's
                    continue
                start, end = pending[tp]
                if offset < start:
                    continue  # fetched before a seek
                if offset >= end:
                    self._held.setdefault(tp, []).append(message)
                    del pending[tp]
                    continue
                if tp not in self._seen and offset > start:
                    self._report_gap(tp, start, offset)
                self._seen.add(tp)
                found[tp].append(message)
                if offset + 1 >= end:
                    del pending[tp]
                else:
                    pending[tp] = (offset + 1, end)
        if any(found.values()):
            yield found

    def _take_run(self, messages: list[Message], pending: dict[TopicPartition, tuple[int, int]],
                  found: dict[TopicPartition, list[Message]]) -> None:
        """Records of the only assigned partition: cut at the range's end with one search."""
        (tp,) = self._next
        offsets = record_offsets(messages)
        if tp not in pending:
            self._held.setdefault(tp, []).extend(messages)
            return
        start, end = pending[tp]
        first = bisect.bisect_left(offsets, start)
        cut = bisect.bisect_left(offsets, end)
        if tp not in self._seen and first < cut and offsets[first] > start:
            self._report_gap(tp, start, offsets[first])
        if first < cut:
            self._seen.add(tp)
        found[tp].extend(messages[first:cut])
        if cut < len(messages):
            self._held.setdefault(tp, []).extend(messages[cut:])
            del pending[tp]
        elif cut and offsets[cut - 1] + 1 >= end:
            del pending[tp]
        elif first < cut:
            pending[tp] = (offsets[cut - 1] + 1, end)

    def _report_gap(self, tp: TopicPartition, start: int, first: int) -> None:
        """A range's first record comes after its start. Under read_committed that is mostly
        transaction markers and aborted writes, which take offsets but are never delivered; only
        when the partition now begins after `start` did retention remove records."""
        try:
            low, _ = self.consumer.get_watermark_offsets(KafkaTopicPartition(tp.topic, tp.partition), timeout=5.0,
                                                         cached=False)
        except KafkaException:
            low = first  # cannot tell: say so
        if low > start:
            log.warning("%s: records from %d to %d are gone from the topic (retention?); reading from %d",
                        tp, start, first - 1, first)
        else:
            log.debug("%s: offsets %d to %d hold no committed record (transaction markers or aborted writes)",
                      tp, start, first - 1)

    def close(self) -> None:
        self.consumer.close()


def _describe(pending: Mapping[TopicPartition, tuple[int, int]]) -> str:
    return ", ".join(f"{tp}[{s}, {e})" for tp, (s, e) in sorted(pending.items()))
