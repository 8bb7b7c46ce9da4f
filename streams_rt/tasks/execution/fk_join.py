"""The foreign-key join's five processors, record by record as Kafka Streams runs them (see
topology/fk_join.py for the shape): the left side's subscriptions, the right side's subscription
store with its answers (to a new subscription, and to every change of a foreign entry), and the left
side's resolution of responses (a stale one, for a value that has changed since, is dropped)."""

from __future__ import annotations

from typing import Any, cast

from streams_rt.state.stores import KeyValueStore
from streams_rt.tasks.execution.base import Exec, SkipCounter
from streams_rt.tasks.execution.chunk import Rec
from streams_rt.tasks.execution.getters import lookup
from streams_rt.tasks.execution.table_ops import TableServices, _PerRecord
from streams_rt.topology.changes import Change
from streams_rt.topology.murmur3 import hash128
from streams_rt.topology.nodes import ProcessorNode
from streams_rt.topology.serdes import TimestampedSerde
from streams_rt.topology.subscriptions import CombinedKeySerde, Instruction, Response, Subscription
from streams_rt.topology.table_ops import (
    ForeignTableJoin,
    ResponseJoin,
    SubscriptionJoin,
    SubscriptionReceive,
    SubscriptionSend,
)


def build_fk_exec(services: TableServices, node: ProcessorNode) -> Exec | None:
    op, name = node.operation, node.name
    if isinstance(op, SubscriptionSend):
        return SubscriptionSendExec(name, op, services.task.partition)
    if isinstance(op, (SubscriptionReceive, ForeignTableJoin)):
        store, definition = services.raw_store(op.store), services.definition(op.store)
        assert isinstance(store, KeyValueStore)
        assert isinstance(definition.key_serde, CombinedKeySerde)
        assert isinstance(definition.stored_value_serde, TimestampedSerde)
        kind = SubscriptionReceiveExec if isinstance(op, SubscriptionReceive) else ForeignTableJoinExec
        return kind(name, _Subscriptions(store, definition.key_serde, definition.stored_value_serde))
    if isinstance(op, SubscriptionJoin):
        return SubscriptionJoinExec(name, op, services)
    if isinstance(op, ResponseJoin):
        return ResponseJoinExec(name, op, services)
    return None


class _Subscriptions:
    """The subscription store (uncached, as Kafka's): (foreign key, primary key) -> (subscription,
    timestamp)."""

    def __init__(self, store: KeyValueStore, keys: CombinedKeySerde, values: TimestampedSerde[Any]) -> None:
        self.store, self.keys, self.values = store, keys, values

    def get(self, key: bytes) -> tuple[Subscription, int] | None:
        return self.read(self.store.get(key))

    def read(self, stored: bytes | None) -> tuple[Subscription, int] | None:
        found = self.values.deserialize_timestamped(stored)
        return None if found is None else (cast(Subscription, found[0]), found[1])


class SubscriptionSendExec(_PerRecord):
    """Kafka's SubscriptionSendProcessorSupplier (as 4.4 runs it): from each change of a left entry,
    the instructions to the old and the new foreign key's side, with the hash of the new value (None:
    deleted). A left join subscribes even a null foreign key (its result is the entry joined with
    None); an inner join unsubscribes an entry whose foreign key becomes null."""

    def __init__(self, name: str, op: SubscriptionSend, partition: int) -> None:
        super().__init__(name)
        self.op, self.partition = op, partition
        self.skipped = SkipCounter(name)

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, change = record[0], record[1]
        extract, op = self.op.extractor, self.op
        data = None if change.new is None else op.values.serialize(change.new)
        hashed = None if data is None else hash128(data)

        def send(foreign_key: Any, instruction: Instruction) -> None:
            out.append((foreign_key, Subscription(hashed, instruction, key, self.partition), record[2], record[3]))

        old_fk = None if change.old is None else extract(change.old)
        if op.left:
            if change.old is None and change.new is None:
                return
            new_fk = None if change.new is None else extract(change.new)
            if old_fk is not None and self._bytes(new_fk) != self._bytes(old_fk):
                send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
            send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        if change.new is None:
            if old_fk is not None:
                send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
            return
        new_fk = extract(change.new)
        if new_fk is None:
            self.skipped.skip("null foreign key")
            if old_fk is not None:  # the entry leaves its old foreign key: its result goes
                send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
        elif old_fk is not None and self._bytes(new_fk) != self._bytes(old_fk):
            send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
            send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
        else:
            send(new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)

    def _bytes(self, foreign_key: Any) -> bytes | None:
        return None if foreign_key is None else self.op.foreign_keys.serialize(foreign_key)


class SubscriptionReceiveExec(_PerRecord):
    """Kafka's SubscriptionReceiveProcessorSupplier: keeps (or, for an unsubscribe, removes) the
    subscription and forwards it as a change of (foreign key, primary key)."""

    def __init__(self, name: str, subscriptions: _Subscriptions) -> None:
        super().__init__(name)
        self.subscriptions = subscriptions
        self.skipped = SkipCounter(name)

    def step(self, record: Rec, out: list[Rec]) -> None:
        foreign_key, subscription, timestamp, index = record
        new = (subscription, timestamp)
        if foreign_key is None:
            if subscription.instruction is not Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
                self.skipped.skip("null foreign key")
                return
            out.append(((None, subscription.primary_key), Change(new, None), timestamp, index))
            return
        subs = self.subscriptions
        stored_key = subs.keys.serialize((foreign_key, subscription.primary_key))
        assert stored_key is not None
        old = subs.get(stored_key)
        if subscription.instruction in (Instruction.DELETE_KEY_AND_PROPAGATE, Instruction.DELETE_KEY_NO_PROPAGATE):
            subs.store.put(stored_key, None)
        else:
            subs.store.put(stored_key, subs.values.serialize_timestamped(subscription, timestamp))
        out.append(((foreign_key, subscription.primary_key), Change(new, old), timestamp, index))


class SubscriptionJoinExec(_PerRecord):
    """Kafka's SubscriptionJoinProcessorSupplier: a subscription answered with the foreign entry's
    current value (by instruction), timestamped with the later of the two."""

    def __init__(self, name: str, op: SubscriptionJoin, services: TableServices) -> None:
        super().__init__(name)
        self.foreign = lookup(op.foreign, services)

    def step(self, record: Rec, out: list[Rec]) -> None:
        (foreign_key, primary_key), change, _, index = record
        subscription, stamp = change.new
        found = None if foreign_key is None else self.foreign(foreign_key)
        if found is not None:
            stamp = max(stamp, found[1])
        instruction = subscription.instruction
        if instruction is Instruction.DELETE_KEY_AND_PROPAGATE:
            out.append((primary_key, Response(subscription.hash, None), stamp, index))
        elif instruction is Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE or (
                instruction is Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE and found is not None):
            out.append((primary_key, Response(subscription.hash, None if found is None else found[0]), stamp, index))


class ForeignTableJoinExec(_PerRecord):
    """Kafka's ForeignTableJoinProcessorSupplier: a foreign entry's change answers every subscriber
    of its key (a prefix scan of the subscription store), with the change's timestamp."""

    def __init__(self, name: str, subscriptions: _Subscriptions) -> None:
        super().__init__(name)
        self.subscriptions = subscriptions
        self.skipped = SkipCounter(name)

    def step(self, record: Rec, out: list[Rec]) -> None:
        foreign_key, change, timestamp, index = record
        if foreign_key is None:
            self.skipped.skip("null key")
            return
        subs = self.subscriptions
        for stored_key, stored in subs.store.prefix_scan(subs.keys.prefix(foreign_key)):
            combined = subs.keys.deserialize(stored_key)
            found = subs.read(stored)
            assert combined is not None and found is not None
            out.append((combined[1], Response(found[0].hash, change.new), timestamp, index))


class ResponseJoinExec(_PerRecord):
    """Kafka's ResponseJoinProcessorSupplier: a response joined with the entry's current value when
    it answers that value (same hash), else dropped as stale; an inner join (or an entry gone)
    without a foreign value gives a delete."""

    def __init__(self, name: str, op: ResponseJoin, services: TableServices) -> None:
        super().__init__(name)
        self.op, self.primary = op, lookup(op.primary, services)
        self.stale = SkipCounter(name)

    def step(self, record: Rec, out: list[Rec]) -> None:
        key, response = record[0], record[1]
        current = self.primary(key)
        data = None if current is None else self.op.values.serialize(current[0])
        if response.hash != (None if data is None else hash128(data)):
            self.stale.skip("a response to a value that has changed since (stale)")
            return
        if response.foreign_value is None and (not self.op.left or current is None):
            result = None
        else:
            result = self.op.joiner(None if current is None else current[0], response.foreign_value)
        out.append((key, result, record[2], record[3]))
