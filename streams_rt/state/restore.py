"""What restores share: the restore consumer's settings, changelog ranges, splitting a `consume()`
batch into records and partition-EOF events, and the restore listener (Kafka's
StateRestoreListener: start, batch restored, end). The reading itself is `changelog_reader.py`."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from tqdm import tqdm

from streams_rt.kafka.watermarks import WatermarkSource, broker_outage, watermark_offsets
from streams_rt.protocol import TopicPartition
from streams_rt.state.errors import ChangelogError

log = logging.getLogger(__name__)

CONSUME_BATCH = 50_000


class StateRestoreListener(Protocol):
    def on_restore_start(self, tp: TopicPartition, store: str, start_offset: int, end_offset: int) -> None: ...
    def on_batch_restored(self, tp: TopicPartition, store: str, batch_end_offset: int, num_restored: int) -> None: ...
    def on_restore_end(self, tp: TopicPartition, store: str, total_restored: int) -> None: ...


class ConsoleRestoreListener:
    """A progress bar on stderr while restoring (hidden when stderr is not a terminal unless
    `force`), and one log line at the start with the offsets to read and one at the end with
    records, seconds and rate."""

    def __init__(self, force: bool = False) -> None:
        self._disable = None if force else not sys.stderr.isatty()
        self._bars: dict[tuple[TopicPartition, str], tuple[tqdm[NoReturn], float]] = {}

    def on_restore_start(self, tp: TopicPartition, store: str, start_offset: int, end_offset: int) -> None:
        bar = tqdm(total=max(0, end_offset - start_offset), desc=f"restore {store} {tp}", unit="rec",
                   unit_scale=True, disable=self._disable, leave=False)
        self._bars[(tp, store)] = (bar, time.perf_counter())
        log.info("restoring store %s from %s: offsets %d to %d (%d to read)", store, tp, start_offset, end_offset,
                 max(0, end_offset - start_offset))

    def on_batch_restored(self, tp: TopicPartition, store: str, batch_end_offset: int, num_restored: int) -> None:
        self._bars[(tp, store)][0].update(num_restored)

    def on_restore_end(self, tp: TopicPartition, store: str, total_restored: int) -> None:
        bar, started = self._bars.pop((tp, store))
        bar.close()
        seconds = time.perf_counter() - started
        rate = total_restored / seconds if seconds > 0 else 0.0
        log.info("restored store %s from %s: %d records in %.2f s (%.0f records/s)",
                 store, tp, total_restored, seconds, rate)


def restore_consumer(bootstrap_servers: str, group_id: str) -> Consumer:
    """A consumer for restore and standby reads: assign-only, committed records only, EOF events on;
    its prefetch queue is bounded so memory does not grow with the changelog."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "group.id": group_id,  # required by librdkafka; never joined (assign only) or committed
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "enable.partition.eof": True,
        "fetch.max.bytes": 16 << 20,
        "max.partition.fetch.bytes": 8 << 20,
        "queued.max.messages.kbytes": 32 << 10,
        # librdkafka's default (1 s) pauses a partition's fetching whenever the local queue is
        # "full", which caps throughput at about one fetch per backoff: measured 3-4x slower.
        "fetch.queue.backoff.ms": 10,
        "fetch.wait.max.ms": 50,
    }
    return Consumer(conf)


def changelog_range(consumer: WatermarkSource, tp: TopicPartition, timeout_s: float = 30.0) -> tuple[int, int]:
    """(first offset, end offset); the end is the last stable offset under read_committed. Retries
    while a new topic's leadership settles."""
    try:
        low, high = watermark_offsets(consumer, tp.topic, tp.partition, timeout_s)
    except KafkaException as exc:
        raise ChangelogError(tp.topic, tp.partition, f"offsets unavailable: {exc}",
                             retriable=broker_outage(exc.args[0])) from exc
    if low < 0 or high < 0:
        raise ChangelogError(tp.topic, tp.partition, "offsets unavailable (does the topic exist?)")
    return low, high


def split_events(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """A `consume()` batch as (records, partition-EOF events), each in order. An EOF event can sit
    anywhere in a batch, with newer records after it. A broker outage's events (the connection
    lost) are logged and passed over: the consumer reconnects by itself and the records around
    them are kept. Any other error raises ChangelogError."""
    errors = list(map(Message.error, messages))  # in C: this runs for every record restored
    if not any(errors):  # a KafkaError is always truthy
        return list(messages), []
    records: list[Message] = []
    eofs: list[Message] = []
    for message, error in zip(messages, errors, strict=True):
        if error is None:
            records.append(message)
        elif error.code() == KafkaError._PARTITION_EOF:
            eofs.append(message)
        elif broker_outage(error) and not error.fatal():
            log.info("changelog consumer: %s (it reconnects by itself)", error)
        else:
            raise ChangelogError(message.topic() or "?", message.partition(), f"consume failed: {error}")
    return records, eofs
