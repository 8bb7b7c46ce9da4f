"""Changelog topics (`<application.id>-<store>-changelog`) and the producer that writes them.

A task has one ChangelogWriter. Under exactly_once_v2 it is transactional with the task's
transactional.id: opening it fences a zombie owner and aborts its open transaction, so records written
after the last commit are never restored (the restore consumer reads committed records only).

Delivery reports come for failed records only (`delivery.report.only.error`): a report per record
cost a Python call each, about a sixth of a host's processing time. What a commit must know of the
records that did arrive, the offset of the last one in each changelog partition written (the store
keeps it), is then asked of the broker once per commit: the partition's end. Only the task's owner
writes its changelog partitions (a zombie is fenced under exactly-once), so everything below that end
is this writer's or older; a transaction marker may sit last, which a restore from the next offset
skips all the same.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.offsets import end_offsets
from streams_rt.kafka.transactional import start_transactional
from streams_rt.kafka.watermarks import broker_outage
from streams_rt.protocol import TopicPartition
from streams_rt.state.errors import ChangelogError, RecordTooLarge

log = logging.getLogger(__name__)

WINDOW_CHANGELOG_EXTRA_RETENTION_MS = 24 * 3600 * 1000  # Kafka's windowstore.changelog.additional.retention.ms
# librdkafka keeps every record (about 200 bytes of its own besides key and value, which its byte
# bound does not count) until its delivery report is served, and reports are served only by a poll.
# Polling every this many sends frees delivered records as a batch goes: without it a batch's
# repartition records all stayed until the commit (200,000 records, ~45 MB, in the benchmark).
DELIVERY_POLL_RECORDS = 5_000


def changelog_topic(application_id: str, store: str) -> str:
    return f"{application_id}-{store}-changelog"


@dataclass(frozen=True)
class ChangelogSpec:
    """A store's changelog: compacted; windowed stores also delete after their retention."""

    topic: str
    window_retention_ms: int | None = None

    def topic_configs(self) -> dict[str, str]:
        if self.window_retention_ms is None:
            return {"cleanup.policy": "compact"}
        retention = self.window_retention_ms + WINDOW_CHANGELOG_EXTRA_RETENTION_MS
        return {"cleanup.policy": "compact,delete", "retention.ms": str(retention)}


def ensure_changelog_topics(
    bootstrap_servers: str,
    specs: Iterable[ChangelogSpec],
    partitions: int,
    replication_factor: int = 1,
    timeout_s: float = 30.0,
) -> None:
    """Create missing changelog topics with `partitions` partitions (the source topic's count); an
    existing topic with another partition count is an error, as in Kafka's InternalTopicManager."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    specs = list(specs)
    existing = admin.list_topics(timeout=timeout_s).topics
    new = []
    for spec in specs:
        if spec.topic in existing:
            count = len(existing[spec.topic].partitions)
            if count != partitions:
                raise ChangelogError(spec.topic, None, f"has {count} partitions, the source has {partitions}")
        else:
            new.append(NewTopic(spec.topic, partitions, replication_factor, config=spec.topic_configs()))
    if not new:
        return
    for topic, future in admin.create_topics(new, request_timeout=timeout_s).items():
        try:
            future.result()
            log.info("created changelog topic %s (%d partitions)", topic, partitions)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ChangelogError(topic, None, f"cannot be created: {exc}") from exc


def record_size(key: bytes | None, value: bytes | None) -> int:
    return len(key or b"") + len(value or b"")


class ChangelogWriter:
    """Sends store writes to changelog partitions; `commit` makes them durable (flush, or commit of
    the transaction) and returns the offset of the last record written to each partition."""

    def __init__(
        self,
        bootstrap_servers: str,
        transactional_id: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "linger.ms": 5,
            "compression.type": "lz4",
            "enable.idempotence": True,
            # Keyed records land where Java's default partitioner puts them (repartition and sink
            # topics are read by partition); keyless ones go anywhere.
            "partitioner": "murmur2_random",
            # A batch sends its repartition and sink records in one go: let the local queue hold
            # them rather than stall the batch on BufferError (bounded by bytes as well).
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 16 * 1024,
            "delivery.report.only.error": True,
            "on_delivery": self._on_delivery,
            "error_cb": self._on_error,
        }
        self._conf = conf
        self._timeout_s = timeout_s
        self._offsets: dict[TopicPartition, int] = {}  # changelog partition -> its last record's offset
        self._unsettled: set[TopicPartition] = set()  # changelog partitions written since the last commit
        self._admin: AdminClient | None = None  # asks for the ends of changelog partitions at commit
        self._errors: list[ChangelogError] = []
        self._too_large: RecordTooLarge | None = None  # the largest record the broker refused for its size
        self._transactional_id = transactional_id
        self._in_transaction = False
        self._unpolled = 0  # records sent since the last poll
        self.produce_s = 0.0  # seconds spent handing records to the producer (the batch timings)
        # The broker could not be reached since the transactional producer was made. Such a producer
        # is replaced before its next transaction: librdkafka (2.16) can keep a broker that left the
        # metadata as the group coordinator, and send_offsets_to_transaction then waits for it forever,
        # whatever its timeout (librdkafka issues 5456 and 5511); a broker restart does that.
        self._outage_seen = False
        self._producer: Producer | None = self._new_producer()

    def _new_producer(self) -> Producer:
        if self._transactional_id is None:
            producer = Producer(self._conf)
        else:
            # Fences any previous owner of this transactional.id and aborts its open transaction.
            try:
                producer, _ = start_transactional(self._conf, self._transactional_id, self._timeout_s)
            except KafkaException as exc:
                raise ChangelogError("*", None, f"the transactional producer cannot start: {exc}",
                                     retriable=broker_outage(exc.args[0])) from None
        self._outage_seen = False
        return producer

    def _replace_producer(self) -> None:
        """A new transactional producer for the old one, whose open transaction (if any) the new
        one's init_transactions aborts; what the old one still held is dropped with it."""
        log.info("changelog producer: the broker was out of reach since the producer started; replacing it "
                 "before the next transaction")
        replacement = self._new_producer()  # raises (retriable) while the broker is still away: kept for next time
        old, self._producer = self._producer, replacement
        if old is not None:
            old.purge()
            try:
                old.close()
            except KafkaException as exc:
                # Fenced by its replacement (it was still ending its transaction): nothing of this
                # batch's, which the replacement runs; not a newer owner of the task.
                log.debug("changelog producer: the replaced producer closed with %s", exc)
        self._errors.clear()  # the dropped records' reports: their transaction was aborted
        self._too_large = None

    def _on_error(self, error: KafkaError) -> None:
        if error.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
            self._outage_seen = True

    @property
    def _live(self) -> Producer:
        """The producer, or a typed error once `close` has dropped it."""
        if self._producer is None:
            raise ChangelogError("*", None, "the changelog writer is closed")
        return self._producer

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
            # The broker refuses a whole produce request: every record in it is reported, the small
            # ones too. The largest names the culprit.
            size = record_size(message.key(), message.value())
            seen = self._too_large
            if seen is None or size > seen.size:
                self._too_large = RecordTooLarge(message.topic() or "*", message.partition(), size, error.str())
            return
        if error is not None:
            self._errors.append(ChangelogError(message.topic() or "*", message.partition(), f"write failed: {error}"))

    def send(self, topic: str, partition: int, key: bytes | None, value: bytes | None, timestamp: int = 0) -> None:
        """One changelog record to its partition; `timestamp` 0 means now. The commit learns where
        the partition's records end."""
        self._begin()
        started = time.perf_counter()
        self._unsettled.add(TopicPartition(topic, partition))
        producer = self._live
        while True:
            try:
                producer.produce(topic, value, key, partition=partition, timestamp=timestamp)
                break
            except BufferError:
                producer.poll(0.05)  # the local queue is full: let deliveries drain it
            except KafkaException as exc:
                raise self._produce_failed(exc, topic, partition, key, value) from None
        self._unpolled += 1
        if self._unpolled >= DELIVERY_POLL_RECORDS:
            producer.poll(0)
            self._unpolled = 0
        self.produce_s += time.perf_counter() - started

    def send_many(self, topic: str, records: Iterable[tuple[bytes | None, bytes | None, int]]) -> None:
        """Records for one topic (a repartition or output topic), partitioned by key: (key, value,
        timestamp; 0 means now)."""
        self._begin()
        started = time.perf_counter()
        produce, poll = self._live.produce, self._live.poll
        unpolled = self._unpolled
        for key, value, timestamp in records:
            while True:
                try:
                    produce(topic, value, key, timestamp=timestamp)
                    break
                except BufferError:
                    poll(0.05)
                except KafkaException as exc:
                    raise self._produce_failed(exc, topic, None, key, value) from None
            unpolled += 1
            if unpolled >= DELIVERY_POLL_RECORDS:
                poll(0)
                unpolled = 0
        self._unpolled = unpolled
        self.produce_s += time.perf_counter() - started

    def _produce_failed(self, exc: KafkaException, topic: str, partition: int | None, key: bytes | None,
                        value: bytes | None) -> Exception:
        """The typed error for a record the producer refused at once: RecordTooLarge for its own size;
        for a transaction already failed (an earlier record's delivery failed: librdkafka refuses
        every later one), that record's error; else the KafkaException itself."""
        error: KafkaError = exc.args[0]
        if error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
            return RecordTooLarge(topic, partition, record_size(key, value), error.str())
        self._live.poll(0)  # the delivery reports that explain it
        earlier = self._too_large or (self._errors[0] if self._errors else None)
        self._too_large, self._errors = None, []
        return earlier or exc

    def _begin(self) -> None:
        if self._transactional_id is not None and not self._in_transaction:
            if self._outage_seen:
                self._replace_producer()
            self._live.begin_transaction()
            self._in_transaction = True

    def flush(self) -> None:
        """Deliver what was sent so far (inside the open transaction under exactly-once: it stays
        invisible to read_committed readers until `commit`)."""
        self._live.flush(self._timeout_s)

    def commit(self, input_offsets: Mapping[TopicPartition, int] | None = None,
               group_metadata: Any = None) -> dict[TopicPartition, int]:
        """Flush (or commit the transaction); raise the first delivery error, naming its partition.
        Exactly-once: `input_offsets` (the next offset to consume per input partition) are committed
        for the consumer group of `group_metadata` in the same transaction."""
        if self._transactional_id is not None and input_offsets:
            self._begin()
        if self._in_transaction:
            # Deliveries first: a record the broker refused fails the commit with its own error
            # (naming its topic), not the transaction's "abortable error" that hides it.
            self._live.flush(self._timeout_s)
            self._raise_delivery_error()
            if self._outage_seen:
                raise ChangelogError("*", None, "the broker was out of reach during the transaction: it is rolled "
                                                "back, to be retried", retriable=True)
        if self._transactional_id is not None and input_offsets:
            offsets = [KafkaTopicPartition(tp.topic, tp.partition, at) for tp, at in input_offsets.items()]
            try:
                self._live.send_offsets_to_transaction(offsets, group_metadata, self._timeout_s)
            except KafkaException as exc:
                raise ChangelogError("*", None, f"committing input offsets in the transaction failed: {exc}") from exc
        if self._in_transaction:
            try:
                self._live.commit_transaction(self._timeout_s)
            except KafkaException as exc:
                raise ChangelogError("*", None, f"transaction commit failed: {exc}") from exc
            self._in_transaction = False
        else:
            remaining = self._live.flush(self._timeout_s)
            if remaining:
                raise ChangelogError("*", None, f"{remaining} records not delivered within {self._timeout_s}s")
        self._raise_delivery_error()
        self._settle()
        return dict(self._offsets)

    def _settle(self) -> None:
        """The offsets of the last records of the changelog partitions written since the last commit:
        below each partition's end (see the module docstring). If the broker cannot say, the stores
        keep the offsets they had, which is safe (a restore then reads a little more than it needs)
        and the next commit asks again: the commit itself has happened and must not be undone."""
        if not self._unsettled:
            return
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self._conf["bootstrap.servers"]})
        try:
            ends = end_offsets(self._admin, self._unsettled, min(self._timeout_s, 10.0), read_committed=False)
        except Exception as exc:  # noqa: BLE001 - BrokerUnreachable or a KafkaException: asked again next commit
            log.warning("changelog ends of %s unknown after a commit (%s): the stores keep their earlier offsets",
                        sorted(self._unsettled), exc)
            return
        for tp, end in ends.items():
            self._offsets[tp] = end - 1
        self._unsettled.clear()

    def _raise_delivery_error(self) -> None:
        self._live.poll(0)
        if self._too_large is not None:
            too_large, self._too_large, self._errors = self._too_large, None, []
            raise too_large
        if self._errors:
            error, self._errors = self._errors[0], []
            raise error

    def abort(self) -> None:
        """Drop what was sent since the last commit as far as possible: the open transaction under
        exactly-once; under at-least-once what is not delivered yet (the rest stays, as Kafka's)."""
        if self._in_transaction and self._outage_seen:
            # The producer is replaced before the next transaction, whose init_transactions aborts this one.
            self._in_transaction = False
        elif self._in_transaction:
            self._live.abort_transaction(self._timeout_s)
            self._in_transaction = False
        elif self._transactional_id is None:
            self._live.purge()
            self._live.poll(0)
        self._too_large, self._errors = None, []  # about records of what was rolled back
        self._unsettled.clear()

    def close(self, discard: bool = False) -> None:
        """Flush (or, with `discard`, purge what is not yet delivered), close and drop the producer
        (it holds our delivery callback: dropping it breaks the cycle, so nothing waits for the
        garbage collector). A dirty close discards: the stores dropped those writes, sending them
        anyway would only duplicate them, and with the broker gone a flush would block."""
        if self._producer is not None:
            try:
                if discard:
                    self._producer.purge()
                    self._producer.poll(0)  # serve the purged records' delivery reports
                else:
                    self._producer.flush(self._timeout_s)
            except KafkaException as exc:
                if not discard:
                    raise
                # A fenced producer (a newer owner took the task over) raises its fatal error from
                # every call: nothing of it is kept, so the dirty close goes on to release the task.
                log.warning("changelog producer: %s; dropping it", exc)
            finally:
                self._producer.close()
                self._producer = None
