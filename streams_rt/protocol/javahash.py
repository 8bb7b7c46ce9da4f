"""The iteration order of java.util.HashMap and HashSet, emulated.

Kafka's encoders write some collections in the order of a HashMap or HashSet they build internally
(the prev/standby task sets of subscriptions v1-6, the subtopology grouping of v7-9 and the topic
dictionary of assignments v5+). To write the same bytes from the same content we order those
collections the same way: by bucket (spread hash masked by the final table size), ties in insertion
order (reversed for computeIfAbsent, which inserts at the head of a bucket). Not emulated: in a table
of 64 or more buckets, a bucket that reaches 8 entries with computeIfAbsent (9 with put or HashSet.add)
becomes a tree whose order differs; that needs deliberately colliding hashes."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from streams_rt.protocol.strings import java_string_hash
from streams_rt.protocol.types import TaskId, TopicPartition

_DEFAULT_CAPACITY = 16
_MIN_TREEIFY_CAPACITY = 64
_TREEIFY_THRESHOLD = 8


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def _final_capacity(calls: Sequence[tuple[int, bool]], compute_if_absent: bool) -> int:
    """The table size of a default-constructed HashMap after these calls: (spread hash, adds a new key).

    put() grows the table after an insertion takes the size past 3/4 of it. computeIfAbsent() grows it
    at the start of any call, new key or not, when the size is already past. While the table is under
    64 buckets, a bucket reaching 9 entries (8 with computeIfAbsent) also doubles it instead of
    becoming a tree."""
    capacity = _DEFAULT_CAPACITY
    treeify_at = _TREEIFY_THRESHOLD if compute_if_absent else _TREEIFY_THRESHOLD + 1
    inserted: list[int] = []
    counts: dict[int, int] = {}
    for h, is_new in calls:
        if compute_if_absent and len(inserted) > capacity * 3 // 4:
            capacity *= 2
            counts = _bucket_counts(inserted, capacity)
        if not is_new:
            continue
        inserted.append(h)
        if capacity < _MIN_TREEIFY_CAPACITY:
            bucket = h & (capacity - 1)
            counts[bucket] = counts.get(bucket, 0) + 1
            if counts[bucket] >= treeify_at:
                capacity *= 2
                counts = _bucket_counts(inserted, capacity)
        if not compute_if_absent and len(inserted) > capacity * 3 // 4:
            capacity *= 2
            counts = _bucket_counts(inserted, capacity)
    return capacity


def _bucket_counts(spread: Sequence[int], capacity: int) -> dict[int, int]:
    """Only needed while the table is small (under 64 buckets), so this stays cheap."""
    if capacity >= _MIN_TREEIFY_CAPACITY:
        return {}
    counts: dict[int, int] = {}
    for h in spread:
        counts[h & (capacity - 1)] = counts.get(h & (capacity - 1), 0) + 1
    return counts


def put_buckets(hashes: Sequence[int]) -> list[int]:
    """For distinct keys added in this order (HashSet.add, HashMap.put), each key's final bucket."""
    spread = [_spread(h) for h in hashes]
    mask = _final_capacity([(h, True) for h in spread], compute_if_absent=False) - 1
    return [h & mask for h in spread]


def put_order(hashes: Sequence[int]) -> list[int]:
    """Indices of distinct keys added in this order, in iteration order (put appends within a bucket)."""
    buckets = put_buckets(hashes)
    return sorted(range(len(buckets)), key=buckets.__getitem__)


def compute_if_absent_order(keys: Sequence[Hashable], hashes: Sequence[int]) -> list[int]:
    """For HashMap.computeIfAbsent called once per element (keys may repeat; `hashes` are their Java
    hashCodes), the indices of the distinct keys, numbered by first appearance, in iteration order.

    computeIfAbsent inserts at the head of a bucket, so ties come in reverse insertion order."""
    seen: set[Hashable] = set()
    calls = []
    distinct = []
    for key, h in zip(keys, hashes, strict=True):
        is_new = key not in seen
        if is_new:
            seen.add(key)
            distinct.append(_spread(h))
        calls.append((_spread(h), is_new))
    mask = _final_capacity(calls, compute_if_absent=True) - 1
    return sorted(range(len(distinct)), key=lambda i: (distinct[i] & mask, -i))


def task_id_hash(task: TaskId) -> int:
    """org.apache.kafka.streams.processor.TaskId.hashCode: Objects.hash(subtopology, partition, topologyName)."""
    name = 0 if task.topology_name is None else java_string_hash(task.topology_name)
    return ((31 * ((31 * (31 + task.subtopology)) + task.partition)) + name) & 0xFFFFFFFF


def topic_partition_hash(tp: TopicPartition, topic_hash: int | None = None) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode; pass the topic's hash to avoid recomputing it."""
    if topic_hash is None:
        topic_hash = java_string_hash(tp.topic)
    return (31 * (31 + tp.partition) + topic_hash) & 0xFFFFFFFF
