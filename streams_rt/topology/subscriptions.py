"""What a foreign-key join (KIP-213) sends between its two sides, in Kafka Streams' formats: a
subscription (the left side's key and value hash, registered under the foreign key), a response
(the right side's value, back to the left key), and the subscription store's key (foreign key and
primary key together, so one prefix scan finds every subscriber of a foreign key)."""

from __future__ import annotations

import enum
import struct
from typing import Any, NamedTuple

from streams_rt.topology.serdes import Serde, SerdeError

_HASH_BYTES = 16
_NO_HASH = 0x80
SUBSCRIPTION_VERSION = 1  # with the primary partition, as Kafka 3.4+ writes it
RESPONSE_VERSION = 0


class Instruction(enum.IntEnum):
    """Kafka's SubscriptionWrapper.Instruction."""

    DELETE_KEY_NO_PROPAGATE = 0  # unsubscribe, send nothing
    DELETE_KEY_AND_PROPAGATE = 1  # unsubscribe, send (key, null)
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2  # subscribe, send the join or (key, null)
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3  # subscribe, send the join only if there is one


class Subscription(NamedTuple):
    """A left entry's subscription to a foreign key: the hash of its value (None: deleted)."""

    hash: bytes | None
    instruction: Instruction
    primary_key: Any
    primary_partition: int


class Response(NamedTuple):
    """The foreign value for a subscriber, with the hash of the left value it answers."""

    hash: bytes | None
    foreign_value: Any


class SubscriptionSerde(Serde[Subscription]):
    """Kafka's SubscriptionWrapperSerde (version 1): {version, 0x80 if no hash}{instruction}
    {16-byte hash}{primary key}{4-byte primary partition}."""

    def __init__(self, primary_keys: Serde[Any]) -> None:
        self.primary_keys = primary_keys
        self.name = f"subscription({primary_keys.name})"

    def serialize(self, value: Subscription | None) -> bytes | None:
        if value is None:
            return None
        key = self.primary_keys.serialize(value.primary_key)
        if key is None:
            raise SerdeError(f"{self.name}: the primary key serialized to None")
        head = bytes([SUBSCRIPTION_VERSION | (_NO_HASH if value.hash is None else 0), value.instruction])
        return head + (value.hash or b"") + key + struct.pack(">i", value.primary_partition)

    def deserialize(self, data: bytes | None) -> Subscription | None:
        if data is None:
            return None
        if len(data) < 6:
            raise SerdeError(f"{self.name}: {len(data)} bytes are too few for a subscription")
        version, has_hash = data[0] & 0x7F, not data[0] & _NO_HASH
        if version != SUBSCRIPTION_VERSION:
            raise SerdeError(f"{self.name}: version {version} is not supported")
        start = 2 + (_HASH_BYTES if has_hash else 0)
        hashed = data[2:start] if has_hash else None
        return Subscription(hashed, Instruction(data[1]), self.primary_keys.deserialize(data[start:-4]),
                            struct.unpack(">i", data[-4:])[0])


class ResponseSerde(Serde[Response]):
    """Kafka's SubscriptionResponseWrapperSerde: {version, 0x80 if no hash}{16-byte hash}{value}.
    As in Kafka, a value that serializes to no bytes reads back as None."""

    def __init__(self, values: Serde[Any]) -> None:
        self.values = values
        self.name = f"response({values.name})"

    def serialize(self, value: Response | None) -> bytes | None:
        if value is None:
            return None
        data = None if value.foreign_value is None else self.values.serialize(value.foreign_value)
        head = bytes([RESPONSE_VERSION | (_NO_HASH if value.hash is None else 0)])
        return head + (value.hash or b"") + (data or b"")

    def deserialize(self, data: bytes | None) -> Response | None:
        if data is None:
            return None
        if not data:
            raise SerdeError(f"{self.name}: no bytes")
        has_hash = not data[0] & _NO_HASH
        start = 1 + (_HASH_BYTES if has_hash else 0)
        body = data[start:]
        return Response(data[1:start] if has_hash else None, self.values.deserialize(body) if body else None)


class CombinedKeySerde(Serde[tuple[Any, Any]]):
    """Kafka's CombinedKeySchema: {4-byte foreign key length}{foreign key}{primary key}."""

    def __init__(self, foreign_keys: Serde[Any], primary_keys: Serde[Any]) -> None:
        self.foreign_keys, self.primary_keys = foreign_keys, primary_keys
        self.name = f"combined({foreign_keys.name},{primary_keys.name})"

    def prefix(self, foreign_key: Any) -> bytes:
        """The bytes every key of this foreign key starts with."""
        data = self.foreign_keys.serialize(foreign_key) or b""
        return struct.pack(">i", len(data)) + data

    def serialize(self, value: tuple[Any, Any] | None) -> bytes | None:
        if value is None:
            return None
        return self.prefix(value[0]) + (self.primary_keys.serialize(value[1]) or b"")

    def deserialize(self, data: bytes | None) -> tuple[Any, Any] | None:
        if data is None:
            return None
        length = struct.unpack(">i", data[:4])[0]
        return (self.foreign_keys.deserialize(data[4:4 + length]), self.primary_keys.deserialize(data[4 + length:]))
