"""SubscriptionInfo: the user data a member sends when it joins, in Kafka Streams' format, versions 1-11.

Layout (Kafka's generated SubscriptionInfoData, big-endian): version; v3+ latest supported version;
process id (16 bytes); v1-6 previous active and standby task lists; v2+ endpoint bytes; v7-9 offset sums
grouped by subtopology; v10+ flat offset sums with a nullable topology name; v8+ unique field (int8);
v9+ error code; v11 client tags. A version above ours is read only up to the latest supported version,
which is all version probing needs."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from streams_rt.protocol.javahash import compute_if_absent_order, put_order, task_id_hash
from streams_rt.protocol.types import (
    EARLIEST_PROBEABLE_VERSION,
    LATEST_SUPPORTED_VERSION,
    MIN_CLIENT_TAGS_VERSION,
    MIN_HOST_INFO_VERSION,
    MIN_NAMED_TOPOLOGY_VERSION,
    MIN_OFFSET_SUM_VERSION,
    MIN_SUBSCRIPTION_ERROR_CODE_VERSION,
    MIN_UNIQUE_FIELD_VERSION,
    OFFSET_SUM_RUNNING_ACTIVE,
    OFFSET_SUM_UNKNOWN,
    UNKNOWN_VERSION,
    AssignorError,
    TaskId,
)
from streams_rt.protocol.wire import (
    I8,
    I32,
    I32_PAIR,
    INT32_MAX,
    INT64_MAX,
    INT64_MIN,
    Reader,
    check_int,
    check_task,
    decoded,
)

_MAX_NULLABLE_STRING = 0x7FFF
_V10_HEAD = struct.Struct(">iiqh")  # subtopology, partition, offset sum, topology name length
_PARTITION_SUM = struct.Struct(">iq")
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True)
class FutureSubscriptionInfo:
    """A subscription from a newer member: only its version and latest supported version are readable."""

    version: int
    latest_supported_version: int


@dataclass(frozen=True)
class SubscriptionInfo:
    """One member's subscription, holding exactly what its version carries on the wire.

    `task_offset_sums` maps each task the member has state for to its changelog offset sum, or to
    OFFSET_SUM_RUNNING_ACTIVE (-2) for a running active task. Versions 1-6 only carry previous active
    (-2) and standby tasks, read back as OFFSET_SUM_UNKNOWN (-3). The constructor refuses fields the
    version cannot carry, so decode(encode(x)) == x; `for_version` drops them instead, as Kafka does."""

    version: int
    latest_supported_version: int
    process_id: uuid.UUID
    user_endpoint: str | None = None
    task_offset_sums: Mapping[TaskId, int] = field(default_factory=dict)
    unique_field: int = 0
    error_code: AssignorError = AssignorError.NONE
    client_tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_offset_sums", MappingProxyType(dict(self.task_offset_sums)))
        object.__setattr__(self, "client_tags", MappingProxyType(dict(self.client_tags)))
        object.__setattr__(self, "error_code", AssignorError(self.error_code))
        _validate(self)

    @classmethod
    def for_version(
        cls,
        version: int,
        process_id: uuid.UUID,
        *,
        latest_supported_version: int = LATEST_SUPPORTED_VERSION,
        user_endpoint: str | None = None,
        task_offset_sums: Mapping[TaskId, int] = _EMPTY,
        unique_field: int = 0,
        error_code: AssignorError = AssignorError.NONE,
        client_tags: Mapping[str, str] = _EMPTY,
    ) -> SubscriptionInfo:
        """Build the subscription a member sends at `version`, dropping what that version cannot carry
        (like Kafka's constructor): v1-6 keep only active (-2) versus standby (-3). Named tasks below
        v10 are an error, as in Kafka."""
        if version < MIN_OFFSET_SUM_VERSION:
            task_offset_sums = {
                t: OFFSET_SUM_RUNNING_ACTIVE if s == OFFSET_SUM_RUNNING_ACTIVE else OFFSET_SUM_UNKNOWN
                for t, s in task_offset_sums.items()
            }
        return cls(
            version=version,
            latest_supported_version=(
                latest_supported_version if version >= EARLIEST_PROBEABLE_VERSION else UNKNOWN_VERSION
            ),
            process_id=process_id,
            user_endpoint=user_endpoint if version >= MIN_HOST_INFO_VERSION else None,
            task_offset_sums=task_offset_sums,
            unique_field=unique_field if version >= MIN_UNIQUE_FIELD_VERSION else 0,
            error_code=error_code if version >= MIN_SUBSCRIPTION_ERROR_CODE_VERSION else AssignorError.NONE,
            client_tags=client_tags if version >= MIN_CLIENT_TAGS_VERSION else {},
        )

    @property
    def prev_tasks(self) -> frozenset[TaskId]:
        """Tasks the member ran as active (offset sum -2)."""
        return frozenset(t for t, s in self.task_offset_sums.items() if s == OFFSET_SUM_RUNNING_ACTIVE)

    @property
    def standby_tasks(self) -> frozenset[TaskId]:
        """Tasks the member has state for but did not run as active."""
        return frozenset(t for t, s in self.task_offset_sums.items() if s != OFFSET_SUM_RUNNING_ACTIVE)

    def encode(self) -> bytes:
        """Kafka's bytes for this subscription, given the same iteration order of the offset-sum map."""
        v = self.version
        out = [I32.pack(v)]
        if v >= EARLIEST_PROBEABLE_VERSION:
            out.append(I32.pack(self.latest_supported_version))
        out.append(self.process_id.bytes)
        if v < MIN_OFFSET_SUM_VERSION:
            _encode_task_sets(self.task_offset_sums, out)
        if v >= MIN_HOST_INFO_VERSION:
            endpoint = (self.user_endpoint or "").encode("utf-8")
            out += (I32.pack(len(endpoint)), endpoint)
        if MIN_OFFSET_SUM_VERSION <= v < MIN_NAMED_TOPOLOGY_VERSION:
            _encode_grouped_sums(self.task_offset_sums, out)
        elif v >= MIN_NAMED_TOPOLOGY_VERSION:
            _encode_flat_sums(self.task_offset_sums, out)
        if v >= MIN_UNIQUE_FIELD_VERSION:
            out.append(I8.pack(self.unique_field))
        if v >= MIN_SUBSCRIPTION_ERROR_CODE_VERSION:
            out.append(I32.pack(self.error_code))
        if v >= MIN_CLIENT_TAGS_VERSION:
            out.append(I32.pack(len(self.client_tags)))
            for key, value in self.client_tags.items():
                k, val = key.encode("utf-8"), value.encode("utf-8")
                out += (I32.pack(len(k)), k, I32.pack(len(val)), val)
        return b"".join(out)


def _encode_task_sets(sums: Mapping[TaskId, int], out: list[bytes]) -> None:
    """v1-6: Kafka collects active and standby tasks into HashSets, so they are written in hash order."""
    active = [t for t, s in sums.items() if s == OFFSET_SUM_RUNNING_ACTIVE]
    standby = [t for t, s in sums.items() if s != OFFSET_SUM_RUNNING_ACTIVE]
    for tasks in (active, standby):
        out.append(I32.pack(len(tasks)))
        for i in put_order([task_id_hash(t) for t in tasks]):
            out.append(I32_PAIR.pack(tasks[i].subtopology, tasks[i].partition))


def _encode_grouped_sums(sums: Mapping[TaskId, int], out: list[bytes]) -> None:
    """v7-9: Kafka groups by subtopology with HashMap.computeIfAbsent, so groups come in that map's order."""
    groups: dict[int, list[bytes]] = {}
    for task, offset_sum in sums.items():
        groups.setdefault(task.subtopology, []).append(_PARTITION_SUM.pack(task.partition, offset_sum))
    subtopologies = list(groups)
    out.append(I32.pack(len(subtopologies)))
    calls = [task.subtopology for task in sums]
    for i in compute_if_absent_order(calls, calls):  # Integer.hashCode is the value itself
        entries = groups[subtopologies[i]]
        out += (I32_PAIR.pack(subtopologies[i], len(entries)), *entries)


def _encode_flat_sums(sums: Mapping[TaskId, int], out: list[bytes]) -> None:
    """v10+: one entry per task, in the map's order, with a nullable UTF-8 topology name."""
    out.append(I32.pack(len(sums)))
    pack = _V10_HEAD.pack
    for task, offset_sum in sums.items():
        if task.topology_name is None:
            out.append(pack(task.subtopology, task.partition, offset_sum, -1))
        else:
            name = task.topology_name.encode("utf-8")
            out += (pack(task.subtopology, task.partition, offset_sum, len(name)), name)


def _validate(info: SubscriptionInfo) -> None:
    v = info.version
    if not 1 <= v <= LATEST_SUPPORTED_VERSION:
        raise ValueError(f"subscription version {v} is not in [1, {LATEST_SUPPORTED_VERSION}]")
    if v < EARLIEST_PROBEABLE_VERSION and info.latest_supported_version != UNKNOWN_VERSION:
        raise ValueError(f"a v{v} subscription does not carry the latest supported version; use -1")
    if v >= EARLIEST_PROBEABLE_VERSION and not v <= info.latest_supported_version <= INT32_MAX:
        raise ValueError(f"latest supported version {info.latest_supported_version} is below version {v}")
    if info.user_endpoint is not None:
        if v < MIN_HOST_INFO_VERSION:
            raise ValueError(f"a v{v} subscription does not carry the user endpoint")
        if info.user_endpoint == "":
            raise ValueError("an empty user endpoint reads back as None; pass None")
        info.user_endpoint.encode("utf-8")
    for task, offset_sum in info.task_offset_sums.items():
        _validate_task(task, v)
        check_int(offset_sum, INT64_MIN, INT64_MAX, f"offset sum of task {task}")
        if v < MIN_OFFSET_SUM_VERSION and offset_sum not in (OFFSET_SUM_RUNNING_ACTIVE, OFFSET_SUM_UNKNOWN):
            raise ValueError(f"a v{v} subscription carries only offset sums -2 and -3 (task {task}: {offset_sum})")
    check_int(info.unique_field, -128, 127, "unique field")
    if v < MIN_UNIQUE_FIELD_VERSION and info.unique_field != 0:
        raise ValueError(f"a v{v} subscription does not carry the unique field")
    if v < MIN_SUBSCRIPTION_ERROR_CODE_VERSION and info.error_code != AssignorError.NONE:
        raise ValueError(f"a v{v} subscription does not carry an error code")
    if v < MIN_CLIENT_TAGS_VERSION and info.client_tags:
        raise ValueError(f"a v{v} subscription does not carry client tags")
    for key, value in info.client_tags.items():
        key.encode("utf-8"), value.encode("utf-8")


def _validate_task(task: TaskId, version: int) -> None:
    """The shared task checks plus the v10+ limit: the name is a nullable string with an int16 length."""
    check_task(task, version)
    if task.topology_name is not None and len(task.topology_name.encode("utf-8")) > _MAX_NULLABLE_STRING:
        raise ValueError(f"topology name of task {task} is longer than {_MAX_NULLABLE_STRING} UTF-8 bytes")


def decode_subscription(data: bytes) -> SubscriptionInfo | FutureSubscriptionInfo:
    """Decode a member's subscription; raises MalformedUserData (with version and offset) for bad bytes."""
    r = Reader(data, "subscription")
    version = r.i32("version")
    if version < 1:
        raise r.error(f"unknown version {version}", 0)
    r.version = version
    latest = UNKNOWN_VERSION
    if version >= EARLIEST_PROBEABLE_VERSION:
        latest = r.i32("latest supported version")
        if latest < version:
            raise r.error(f"latest supported version {latest} is below the used version {version}", 4)
    if version > LATEST_SUPPORTED_VERSION:
        return FutureSubscriptionInfo(version, latest)
    process_id = r.uuid("process id")
    sums: dict[TaskId, int] = {}
    if version < MIN_OFFSET_SUM_VERSION:
        _read_task_set(r, sums, OFFSET_SUM_RUNNING_ACTIVE, "previous active task")
        _read_task_set(r, sums, OFFSET_SUM_UNKNOWN, "standby task")
    endpoint = None
    if version >= MIN_HOST_INFO_VERSION:
        endpoint = r.utf8_field("user endpoint") or None
    if MIN_OFFSET_SUM_VERSION <= version < MIN_NAMED_TOPOLOGY_VERSION:
        _read_grouped_sums(r, sums)
    elif version >= MIN_NAMED_TOPOLOGY_VERSION:
        _read_flat_sums(r, sums)
    unique_field = r.i8("unique field") if version >= MIN_UNIQUE_FIELD_VERSION else 0
    error_code = r.error_code() if version >= MIN_SUBSCRIPTION_ERROR_CODE_VERSION else AssignorError.NONE
    tags: dict[str, str] = {}
    if version >= MIN_CLIENT_TAGS_VERSION:
        for _ in range(r.count("client tag", 8)):
            at = r.pos
            key = r.utf8_field("client tag key")
            value = r.utf8_field("client tag value")
            if key in tags:
                raise r.error(f"duplicate client tag {key!r}", at)
            tags[key] = value
    r.end()
    return decoded(
        SubscriptionInfo,
        version=version,
        latest_supported_version=latest,
        process_id=process_id,
        user_endpoint=endpoint,
        task_offset_sums=MappingProxyType(sums),
        unique_field=unique_field,
        error_code=error_code,
        client_tags=MappingProxyType(tags),
    )


def _add(r: Reader, sums: dict[TaskId, int], task: TaskId, offset_sum: int, at: int) -> None:
    size = len(sums)
    sums[task] = offset_sum
    if len(sums) == size:  # one hash per entry: a repeat does not grow the map
        raise r.error(f"task {task} appears twice", at)


def _read_task_set(r: Reader, sums: dict[TaskId, int], offset_sum: int, what: str) -> None:
    for _ in range(r.count(what, 8)):
        at = r.pos
        sub, part = r.unpack(I32_PAIR, what)
        _add(r, sums, TaskId(sub, part), offset_sum, at)


def _read_grouped_sums(r: Reader, sums: dict[TaskId, int]) -> None:
    for _ in range(r.count("subtopology offset sums", 8)):
        sub = r.i32("subtopology")
        for _ in range(r.count("partition offset sum", _PARTITION_SUM.size)):
            at = r.pos
            part, offset_sum = r.unpack(_PARTITION_SUM, "partition offset sum")
            _add(r, sums, TaskId(sub, part), offset_sum, at)


def _read_flat_sums(r: Reader, sums: dict[TaskId, int]) -> None:
    data, unpack, head = r.data, _V10_HEAD.unpack_from, _V10_HEAD.size
    for _ in range(r.count("task offset sum", head)):
        at = r.pos
        r.need(head, "task offset sum")
        sub, part, offset_sum, name_len = unpack(data, at)
        r.pos = at + head
        if name_len == -1:
            task = TaskId(sub, part)
        elif name_len >= 0:
            # An empty name reads as no name, as Kafka's TaskId constructor does.
            name = r.utf8(r.take(name_len, "topology name"), "topology name", at + head)
            task = TaskId(sub, part, name or None)
        else:
            raise r.error(f"invalid topology name length {name_len}", at + 16)
        size = len(sums)  # `_add` inlined: a call per entry costs ~4% of a 10,000-task decode
        sums[task] = offset_sum
        if len(sums) == size:
            raise r.error(f"task {task} appears twice", at)
