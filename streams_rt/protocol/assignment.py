"""AssignmentInfo: the user data the group leader returns to each member, Kafka Streams' format v1-11.

Layout (DataOutputStream, big-endian): version; v3+ commonly supported version; active task list;
standby task map (task -> topic partitions); v2-4 partitions by host; v5 the same through a topic
dictionary; v6+ active and standby partitions by host through one dictionary; v4+ error code; v7+ next
rebalance time. Task ids carry a topology name (int32 length + UTF-16 chars) from v10 on; topics and
hosts are modified UTF-8 (writeUTF)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from types import MappingProxyType
from typing import Any, TypeVar

from streams_rt.protocol.errors import MalformedUserData
from streams_rt.protocol.javahash import put_order, topic_partition_hash
from streams_rt.protocol.strings import encode_mutf8, java_string_hash
from streams_rt.protocol.types import (
    EARLIEST_PROBEABLE_VERSION,
    LATEST_SUPPORTED_VERSION,
    MIN_ERROR_CODE_VERSION,
    MIN_HOST_INFO_VERSION,
    MIN_NAMED_TOPOLOGY_VERSION,
    MIN_NEXT_REBALANCE_VERSION,
    MIN_STANDBY_PARTITIONS_BY_HOST_VERSION,
    MIN_TOPIC_DICTIONARY_VERSION,
    UNKNOWN_VERSION,
    AssignorError,
    HostInfo,
    TaskId,
    TopicPartition,
)
from streams_rt.protocol.wire import (
    I32,
    I32_PAIR,
    I64,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    Reader,
    check_int,
    check_task,
    decoded,
    mutf8_field,
    utf16_field,
)

NO_NEXT_REBALANCE = 2**63 - 1  # Long.MAX_VALUE: no follow-up rebalance scheduled

Partitions = tuple[TopicPartition, ...]
_NAMED_TASK_HEAD = struct.Struct(">iii")  # subtopology, partition, topology name length
_EMPTY: Mapping[Any, Partitions] = MappingProxyType({})
K = TypeVar("K")


def _tuples(by_key: Mapping[K, Iterable[TopicPartition]]) -> dict[K, Partitions]:
    """The same mapping with tuples of partitions (the wire order kept)."""
    return {k: tuple(v) for k, v in by_key.items()}


@dataclass(frozen=True)
class AssignmentInfo:
    """One member's assignment, holding exactly what its version carries on the wire.

    Collections keep their wire order (so Kafka's bytes decode and re-encode unchanged); the partition
    collections are Kafka sets and must not repeat an element. `active_tasks` is a list: in Kafka its
    i-th entry belongs to the member's i-th assigned partition, so a task may repeat. The constructor
    refuses fields the version cannot carry; `for_version` drops them instead."""

    version: int
    commonly_supported_version: int
    active_tasks: tuple[TaskId, ...] = ()
    standby_tasks: Mapping[TaskId, Partitions] = field(default_factory=dict)
    partitions_by_host: Mapping[HostInfo, Partitions] = field(default_factory=dict)
    standby_partitions_by_host: Mapping[HostInfo, Partitions] = field(default_factory=dict)
    error_code: AssignorError = AssignorError.NONE
    next_rebalance_ms: int = NO_NEXT_REBALANCE

    def __post_init__(self) -> None:
        object.__setattr__(self, "active_tasks", tuple(self.active_tasks))
        for name in ("standby_tasks", "partitions_by_host", "standby_partitions_by_host"):
            object.__setattr__(self, name, MappingProxyType(_tuples(getattr(self, name))))
        object.__setattr__(self, "error_code", AssignorError(self.error_code))
        _validate(self)

    @classmethod
    def for_version(
        cls,
        version: int,
        *,
        commonly_supported_version: int = LATEST_SUPPORTED_VERSION,
        active_tasks: Iterable[TaskId] = (),
        standby_tasks: Mapping[TaskId, Iterable[TopicPartition]] = _EMPTY,
        partitions_by_host: Mapping[HostInfo, Iterable[TopicPartition]] = _EMPTY,
        standby_partitions_by_host: Mapping[HostInfo, Iterable[TopicPartition]] = _EMPTY,
        error_code: AssignorError = AssignorError.NONE,
        next_rebalance_ms: int = NO_NEXT_REBALANCE,
    ) -> AssignmentInfo:
        """Build the assignment sent at `version`, dropping what that version cannot carry (as Kafka's
        encoder silently does). Named tasks below v10 stay an error, as in Kafka."""
        return cls(
            version=version,
            commonly_supported_version=(
                commonly_supported_version if version >= EARLIEST_PROBEABLE_VERSION else UNKNOWN_VERSION
            ),
            active_tasks=tuple(active_tasks),
            standby_tasks=_tuples(standby_tasks),
            partitions_by_host=_tuples(partitions_by_host) if version >= MIN_HOST_INFO_VERSION else _EMPTY,
            standby_partitions_by_host=(
                _tuples(standby_partitions_by_host) if version >= MIN_STANDBY_PARTITIONS_BY_HOST_VERSION else _EMPTY
            ),
            error_code=error_code if version >= MIN_ERROR_CODE_VERSION else AssignorError.NONE,
            next_rebalance_ms=next_rebalance_ms if version >= MIN_NEXT_REBALANCE_VERSION else NO_NEXT_REBALANCE,
        )

    def encode(self) -> bytes:
        """Kafka's bytes for this assignment, given the same iteration order of its collections."""
        return b"".join([*_head_bytes(self), *_tasks_bytes(self.active_tasks, self.standby_tasks, self.version),
                         *_shared_bytes(self)])


class AssignmentWriter:
    """Writes the AssignmentInfo of every member of one round at one version. All but a member's own
    tasks is the same for every member (the group-wide partitions by host, the error code, the next
    rebalance time): it is checked and encoded once, here. Each member's bytes carry every host, so
    encoding them whole per member made a round of n members cost n squared.
    `encode(...)` is byte for byte `AssignmentInfo.for_version(...).encode()` of the same content."""

    def __init__(
        self,
        version: int,
        *,
        commonly_supported_version: int = LATEST_SUPPORTED_VERSION,
        partitions_by_host: Mapping[HostInfo, Iterable[TopicPartition]] = _EMPTY,
        standby_partitions_by_host: Mapping[HostInfo, Iterable[TopicPartition]] = _EMPTY,
        error_code: AssignorError = AssignorError.NONE,
        next_rebalance_ms: int = NO_NEXT_REBALANCE,
    ) -> None:
        """Raises ValueError for shared content that version cannot write (as AssignmentInfo does)."""
        shared = AssignmentInfo.for_version(
            version,
            commonly_supported_version=commonly_supported_version,
            partitions_by_host=partitions_by_host,
            standby_partitions_by_host=standby_partitions_by_host,
            error_code=error_code,
            next_rebalance_ms=next_rebalance_ms,
        )
        self.version = version
        self._head = b"".join(_head_bytes(shared))
        self._shared = b"".join(_shared_bytes(shared))

    def encode(
        self,
        active_tasks: Iterable[TaskId] = (),
        standby_tasks: Mapping[TaskId, Iterable[TopicPartition]] = _EMPTY,
    ) -> bytes:
        """One member's AssignmentInfo; ValueError for tasks this version cannot write."""
        active, standby = tuple(active_tasks), _tuples(standby_tasks)
        _validate_tasks(self.version, active, standby)
        return b"".join([self._head, *_tasks_bytes(active, standby, self.version), self._shared])


def _head_bytes(info: AssignmentInfo) -> list[bytes]:
    out = [I32.pack(info.version)]
    if info.version >= EARLIEST_PROBEABLE_VERSION:
        out.append(I32.pack(info.commonly_supported_version))
    return out


def _tasks_bytes(active: tuple[TaskId, ...], standby: Mapping[TaskId, Partitions], v: int) -> list[bytes]:
    """The member's own part: its active task list and its standby task map."""
    out = [I32.pack(len(active))]
    out += [_task_bytes(t, v) for t in active]
    out.append(I32.pack(len(standby)))
    for task, partitions in standby.items():
        out += (_task_bytes(task, v), *_partitions_bytes(partitions))
    return out


def _shared_bytes(info: AssignmentInfo) -> list[bytes]:
    """What every member of a round gets alike: partitions by host, error code, next rebalance time."""
    v = info.version
    out: list[bytes] = []
    if MIN_HOST_INFO_VERSION <= v < MIN_TOPIC_DICTIONARY_VERSION:
        out.append(I32.pack(len(info.partitions_by_host)))
        for host, partitions in info.partitions_by_host.items():
            out += (*_host_bytes(host), *_partitions_bytes(partitions))
    elif v >= MIN_TOPIC_DICTIONARY_VERSION:
        maps = [info.partitions_by_host]
        if v >= MIN_STANDBY_PARTITIONS_BY_HOST_VERSION:
            maps.append(info.standby_partitions_by_host)
        index = _topic_dictionary(maps, out)
        for host_map in maps:
            out.append(I32.pack(len(host_map)))
            for host, partitions in host_map.items():
                out += (*_host_bytes(host), I32.pack(len(partitions)))
                out += [I32_PAIR.pack(index[tp.topic], tp.partition) for tp in partitions]
    if v >= MIN_ERROR_CODE_VERSION:
        out.append(I32.pack(info.error_code))
    if v >= MIN_NEXT_REBALANCE_VERSION:
        out.append(I64.pack(info.next_rebalance_ms))
    return out


def _task_bytes(task: TaskId, version: int) -> bytes:
    head = I32_PAIR.pack(task.subtopology, task.partition)
    if version < MIN_NAMED_TOPOLOGY_VERSION:
        return head
    return head + (I32.pack(0) if task.topology_name is None else utf16_field(task.topology_name))


def _partitions_bytes(partitions: Partitions) -> list[bytes]:
    out = [I32.pack(len(partitions))]
    for tp in partitions:
        out += (mutf8_field(tp.topic, "topic"), I32.pack(tp.partition))
    return out


def _host_bytes(host: HostInfo) -> tuple[bytes, bytes]:
    return mutf8_field(host.host, "host"), I32.pack(host.port)


def _topic_dictionary(maps: list[Mapping[HostInfo, Partitions]], out: list[bytes]) -> dict[str, int]:
    """Write the topic dictionary as Kafka does and return topic -> index.

    Kafka numbers topics in the iteration order of a HashSet of all the partitions, then writes the
    dictionary in the iteration order of a HashMap keyed by topic name; both orders are emulated."""
    partitions = list(dict.fromkeys(chain.from_iterable(p for host_map in maps for p in host_map.values())))
    topic_hashes = {topic: java_string_hash(topic) for topic in {tp.topic for tp in partitions}}
    order = put_order([topic_partition_hash(tp, topic_hashes[tp.topic]) for tp in partitions])
    topics = list(dict.fromkeys(partitions[i].topic for i in order))
    out.append(I32.pack(len(topics)))
    for i in put_order([topic_hashes[t] for t in topics]):
        out += (I32.pack(i), mutf8_field(topics[i], "topic"))
    return {topic: i for i, topic in enumerate(topics)}


def _validate(info: AssignmentInfo) -> None:
    v = info.version
    if not 1 <= v <= LATEST_SUPPORTED_VERSION:
        raise ValueError(f"assignment version {v} is not in [1, {LATEST_SUPPORTED_VERSION}]")
    if v < EARLIEST_PROBEABLE_VERSION and info.commonly_supported_version != UNKNOWN_VERSION:
        raise ValueError(f"a v{v} assignment does not carry the commonly supported version; use -1")
    check_int(info.commonly_supported_version, INT32_MIN, INT32_MAX, "commonly supported version")
    _validate_tasks(v, info.active_tasks, info.standby_tasks)
    if v < MIN_HOST_INFO_VERSION and info.partitions_by_host:
        raise ValueError(f"a v{v} assignment does not carry partitions by host")
    if v < MIN_STANDBY_PARTITIONS_BY_HOST_VERSION and info.standby_partitions_by_host:
        raise ValueError(f"a v{v} assignment does not carry standby partitions by host")
    host_maps = (("partitions", info.partitions_by_host), ("standby partitions", info.standby_partitions_by_host))
    for what, host_map in host_maps:
        for host, partitions in host_map.items():
            check_int(host.port, INT32_MIN, INT32_MAX, f"port of host {host}")
            _check_partitions(partitions, f"{what} of host {host}")
    if v < MIN_ERROR_CODE_VERSION and info.error_code != AssignorError.NONE:
        raise ValueError(f"a v{v} assignment does not carry an error code")
    check_int(info.next_rebalance_ms, INT64_MIN, INT64_MAX, "next rebalance time")
    if v < MIN_NEXT_REBALANCE_VERSION and info.next_rebalance_ms != NO_NEXT_REBALANCE:
        raise ValueError(f"a v{v} assignment does not carry a next rebalance time")


def _validate_tasks(v: int, active: tuple[TaskId, ...], standby: Mapping[TaskId, Partitions]) -> None:
    for task in (*active, *standby):
        check_task(task, v)
    for task, partitions in standby.items():
        _check_partitions(partitions, f"partitions of standby task {task}")


def _check_partitions(partitions: Partitions, what: str) -> None:
    if len(set(partitions)) != len(partitions):
        raise ValueError(f"{what} repeat a partition (Kafka sends a set)")
    for tp in partitions:
        check_int(tp.partition, INT32_MIN, INT32_MAX, f"partition number in {what}")


def decode_assignment(data: bytes) -> AssignmentInfo:
    """Decode an assignment; raises MalformedUserData (with version and offset) for bad bytes."""
    r = Reader(data, "assignment")
    version = r.i32("version")
    if not 1 <= version <= LATEST_SUPPORTED_VERSION:
        raise r.error(f"unknown version {version} (this member supports 1-{LATEST_SUPPORTED_VERSION})", 0)
    r.version = version
    commonly = r.i32("commonly supported version") if version >= EARLIEST_PROBEABLE_VERSION else UNKNOWN_VERSION
    task_size = 12 if version >= MIN_NAMED_TOPOLOGY_VERSION else 8
    active = _read_active_tasks(r, r.count("active task", task_size))
    standby: dict[TaskId, Partitions] = {}
    for _ in range(r.count("standby task", task_size + 4)):
        at = r.pos
        task = _read_task(r)
        if task in standby:
            raise r.error(f"standby task {task} appears twice", at)
        standby[task] = _read_partitions(r, None)
    by_host: dict[HostInfo, Partitions] = {}
    standby_by_host: dict[HostInfo, Partitions] = {}
    if MIN_HOST_INFO_VERSION <= version < MIN_TOPIC_DICTIONARY_VERSION:
        by_host = _read_host_map(r, None)
    elif version >= MIN_TOPIC_DICTIONARY_VERSION:
        topics = _read_topic_dictionary(r)
        by_host = _read_host_map(r, topics)
        if version >= MIN_STANDBY_PARTITIONS_BY_HOST_VERSION:
            standby_by_host = _read_host_map(r, topics)
    error_code = r.error_code() if version >= MIN_ERROR_CODE_VERSION else AssignorError.NONE
    next_rebalance = r.i64("next rebalance time") if version >= MIN_NEXT_REBALANCE_VERSION else NO_NEXT_REBALANCE
    r.end()
    return decoded(
        AssignmentInfo,
        version=version,
        commonly_supported_version=commonly,
        active_tasks=active,
        standby_tasks=MappingProxyType(standby),
        partitions_by_host=MappingProxyType(by_host),
        standby_partitions_by_host=MappingProxyType(standby_by_host),
        error_code=error_code,
        next_rebalance_ms=next_rebalance,
    )


def _read_active_tasks(r: Reader, count: int) -> tuple[TaskId, ...]:
    """The active task list; unnamed tasks (the common case) take a single unpack each."""
    data, tasks = r.data, []
    head = _NAMED_TASK_HEAD if r.version is not None and r.version >= MIN_NAMED_TOPOLOGY_VERSION else I32_PAIR
    for _ in range(count):
        at = r.pos
        if at + head.size <= len(data):
            fields = head.unpack_from(data, at)
            if len(fields) == 2 or fields[2] == 0:
                r.pos = at + head.size
                tasks.append(TaskId(fields[0], fields[1]))
                continue
        tasks.append(_read_task(r))  # a named task, or the bounds error with its offset
    return tuple(tasks)


def _read_task(r: Reader) -> TaskId:
    sub, part = r.unpack(I32_PAIR, "task id")
    if r.version is None or r.version < MIN_NAMED_TOPOLOGY_VERSION:
        return TaskId(sub, part)
    at = r.pos
    n_chars = r.i32("topology name length")
    if n_chars < 0:
        raise r.error(f"negative topology name length {n_chars}", at)
    return TaskId(sub, part, r.utf16(n_chars, "topology name") or None)


def _read_partitions(r: Reader, topics: dict[int, str] | None) -> Partitions:
    """A set of topic partitions, either with topic names (v1-4 and standby tasks) or dictionary indices."""
    count = r.count("topic partition", 6 if topics is None else 8)
    start = r.pos
    if topics is None:
        partitions = [TopicPartition(r.mutf8("topic"), r.i32("partition")) for _ in range(count)]
    else:  # count() has checked that 8 bytes per entry remain: unpack them all at once
        flat = struct.unpack_from(f">{2 * count}i", r.data, start)
        r.pos = start + 8 * count
        indices = flat[::2]
        try:
            partitions = [TopicPartition(topics[i], p) for i, p in zip(indices, flat[1::2], strict=True)]
        except KeyError as missing:
            at = start + 8 * indices.index(missing.args[0])
            raise r.error(f"topic index {missing.args[0]} is not in the topic dictionary", at) from None
    unique = dict.fromkeys(partitions)
    if len(unique) != len(partitions):
        raise _duplicate_partition(r, partitions, topics is None, start)
    return tuple(unique)


def _duplicate_partition(r: Reader, partitions: list[TopicPartition], named: bool, start: int) -> MalformedUserData:
    """The error for the first partition that repeats, at its byte offset (only computed on failure)."""
    seen: set[TopicPartition] = set()
    at = start
    for tp in partitions:
        if tp in seen:
            return r.error(f"partition {tp} appears twice in one set", at)
        seen.add(tp)
        at += (2 + len(encode_mutf8(tp.topic)) + 4) if named else 8
    raise AssertionError("no duplicate found")


def _read_host_map(r: Reader, topics: dict[int, str] | None) -> dict[HostInfo, Partitions]:
    hosts: dict[HostInfo, Partitions] = {}
    for _ in range(r.count("host", 10)):
        at = r.pos
        host = HostInfo(r.mutf8("host"), r.i32("port"))
        if host in hosts:
            raise r.error(f"host {host} appears twice", at)
        hosts[host] = _read_partitions(r, topics)
    return hosts


def _read_topic_dictionary(r: Reader) -> dict[int, str]:
    topics: dict[int, str] = {}
    for _ in range(r.count("topic dictionary entry", 6)):
        at = r.pos
        topic_index = r.i32("topic index")
        if topic_index in topics:
            raise r.error(f"topic index {topic_index} appears twice in the dictionary", at)
        topics[topic_index] = r.mutf8("topic")
    return topics
