"""The verifier, after Kafka's SmokeTestDriver.verify and EosTestDriver: it recomputes every
result of the smoke application from the records the driver produced and compares.

- exactly_once_v2: every output topic, read with read_committed, holds exactly the reference's
  records, key by key in order (the echo is the input itself; each aggregate's updates are the
  running aggregate after each record), with nothing beyond them; no transaction is left open;
  the final state equals the reference.
- at_least_once: nothing is lost (every produced record is echoed, no aggregate falls short of the
  reference, min and max are exact); duplicates are counted and reported, not failed.

The final state is read from the stores' changelogs (`StateSource`); interactive queries can be
another `StateSource` with the same shape, compared the same way.
"""

from __future__ import annotations

import operator
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streams_rt.kafka.offsets import end_offsets
from streams_rt.protocol import TopicPartition
from streams_rt.state.changelog import changelog_topic
from streams_rt.topology import Serdes
from streams_rt.topology.serdes import Serde, TimestampedSerde
from tests.faults.driver import Produced
from tests.faults.smoke_topology import AGGREGATES, ECHO, WINDOWED, WINDOWS

S, I64 = Serdes.string(), Serdes.int64()
STORED_I64 = TimestampedSerde(I64)  # the aggregates' stores keep each value behind its timestamp
REDUCERS: dict[str, Callable[[int, int], int]] = {"min": min, "max": max, "sum": operator.add}
StateKey = str | tuple[str, int]  # a key, or (key, window start) for the windowed count


def reference_updates(produced: Iterable[Produced]) -> dict[str, dict[StateKey, list[int]]]:
    """Per output (echo, min, max, sum, cnt, wcnt), per key, every value the application must emit,
    in order: the input for the echo, the running aggregate after each record for the rest."""
    updates: dict[str, dict[StateKey, list[int]]] = {name: defaultdict(list) for name in ("echo", *AGGREGATES,
                                                                                           WINDOWED)}
    current: dict[str, dict[str, int]] = {name: {} for name in AGGREGATES}
    for record in produced:
        updates["echo"][record.key].append(record.value)
        for name, reduce in REDUCERS.items():
            seen = current[name].get(record.key)
            current[name][record.key] = record.value if seen is None else reduce(seen, record.value)
        current["cnt"][record.key] = current["cnt"].get(record.key, 0) + 1
        for name in AGGREGATES:
            updates[name][record.key].append(current[name][record.key])
        for start in WINDOWS.starts_for(record.timestamp):
            window: list[int] = updates[WINDOWED][(record.key, start)]
            window.append(len(window) + 1)
    return {name: dict(by_key) for name, by_key in updates.items()}


def read_topic(bootstrap: str, topic: str, windowed: bool = False, timeout_s: float = 60.0,
               values: Serde[int] = I64) -> dict[StateKey, list[int]]:
    """Every record of `topic` (read_committed, from the beginning to each partition's last stable
    offset), values per key in offset order."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = sorted(admin.list_topics(topic, timeout=30).topics[topic].partitions)
    ends = end_offsets(admin, [TopicPartition(topic, p) for p in partitions], read_committed=True)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"fault-verifier-{topic}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        wanted = [KafkaTopicPartition(topic, p, 0) for p in partitions if ends[TopicPartition(topic, p)] > 0]
        consumer.assign(wanted)
        out: dict[StateKey, list[int]] = defaultdict(list)
        deadline = time.monotonic() + timeout_s
        while wanted:
            message = consumer.poll(1.0)
            if message is not None:
                error = message.error()
                if error is not None:
                    raise RuntimeError(f"reading {topic}: {error}")
                out[_decode_key(message.key(), windowed)].append(_decode_value(message.value(), values))
            positions = consumer.position(wanted)
            wanted = [tp for tp in positions if tp.offset < ends[TopicPartition(topic, tp.partition)]]
            if wanted and time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: {len(wanted)} partitions short of their ends {ends} "
                                   f"after {timeout_s} s")
        return dict(out)
    finally:
        consumer.close()


def _decode_key(data: bytes | None, windowed: bool) -> StateKey:
    if data is None:
        raise ValueError("a record without a key")
    if windowed:
        return (data[:-8].decode(), int.from_bytes(data[-8:], "big", signed=True))
    return data.decode()


def _decode_value(data: bytes | None, serde: Serde[int]) -> int:
    value = serde.deserialize(data)
    if value is None:
        raise ValueError("a record without a value")
    return value


class StateSource(Protocol):
    """Where the final state of a store is read from: its changelog now; interactive queries later."""

    def __call__(self, store: str) -> Mapping[StateKey, int]: ...


def changelog_state(bootstrap: str, application_id: str) -> StateSource:
    """Each store's final state: the last value per key in its changelog (read_committed)."""
    def read(store: str) -> Mapping[StateKey, int]:
        records = read_topic(bootstrap, changelog_topic(application_id, store), windowed=store == WINDOWED,
                             values=STORED_I64)
        return {key: values[-1] for key, values in records.items()}
    return read


def open_transactions(bootstrap: str, topics: Iterable[str]) -> dict[TopicPartition, int]:
    """Partitions whose last stable offset lags their high watermark: a transaction still open
    (EosTestDriver's verifyAllTransactionFinished)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tps = [TopicPartition(topic, p) for topic in topics
           for p in admin.list_topics(topic, timeout=30).topics[topic].partitions]
    stable = end_offsets(admin, tps, read_committed=True)
    high = end_offsets(admin, tps, read_committed=False)
    return {tp: high[tp] - stable[tp] for tp in tps if high[tp] != stable[tp]}


@dataclass
class Verdict:
    """What the verifier found. `lost` and `duplicated` count echoed records (the input); problems
    name every difference that fails the guarantee."""

    guarantee: str
    produced: int
    verified: int = 0
    lost: int = 0
    duplicated: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        return (f"produced={self.produced} verified={self.verified} lost={self.lost} "
                f"duplicated={self.duplicated}")


def verify(guarantee: str, produced: list[Produced], outputs: Mapping[str, Mapping[StateKey, list[int]]],
           state: StateSource) -> Verdict:
    """Compare the application's outputs (`outputs`: echo, min, max, sum, cnt, wcnt, each values per
    key in offset order) and final state with the reference recomputed from `produced`."""
    exact = guarantee == "exactly_once_v2"
    reference = reference_updates(produced)
    verdict = Verdict(guarantee, len(produced))
    echoed: Counter[tuple[StateKey, int]] = Counter((key, v) for key, values in outputs["echo"].items()
                                                    for v in values)
    wanted: Counter[tuple[StateKey, int]] = Counter((p.key, p.value) for p in produced)
    verdict.lost = (wanted - echoed).total()
    verdict.duplicated = (echoed - wanted).total()
    verdict.verified = (wanted & echoed).total()
    if verdict.lost:
        verdict.problems.append(f"echo: {verdict.lost} produced records never came out")
    for name, expected in reference.items():
        found = outputs[name]
        if exact:
            _compare_exact(name, expected, found, verdict)
        if name == "echo":
            continue
        final = {key: values[-1] for key, values in expected.items()}
        _compare_final(f"{name} output", final, {k: v[-1] for k, v in found.items()}, exact, name, verdict)
        _compare_final(f"{name} store", final, state(name), exact, name, verdict)
    if exact and verdict.duplicated:
        verdict.problems.append(f"echo: {verdict.duplicated} records came out twice under exactly-once")
    return verdict


def _compare_exact(name: str, expected: Mapping[StateKey, list[int]], found: Mapping[StateKey, list[int]],
                   verdict: Verdict) -> None:
    beyond = sorted(set(found) - set(expected), key=str)
    if beyond:
        verdict.problems.append(f"{name}: records for {len(beyond)} keys that were never produced, e.g. {beyond[:3]}")
    wrong = [key for key in expected if found.get(key) != expected[key]]
    for key in wrong[:3]:
        got = found.get(key, [])
        verdict.problems.append(f"{name}[{key}]: {len(got)} records where {len(expected[key])} were expected; "
                                f"first difference at {_first_difference(expected[key], got)}")
    if len(wrong) > 3:
        verdict.problems.append(f"{name}: {len(wrong) - 3} more keys differ")


def _compare_final(what: str, expected: Mapping[StateKey, int], found: Mapping[StateKey, int], exact: bool,
                   name: str, verdict: Verdict) -> None:
    """Exactly-once: equal. At-least-once: min and max equal (replays cannot move them), sums and
    counts at least the reference (a replay only adds), no key missing."""
    missing = [key for key in expected if key not in found]
    if missing:
        verdict.problems.append(f"{what}: {len(missing)} keys missing, e.g. {sorted(missing, key=str)[:3]}")
    extra = [key for key in found if key not in expected]
    if extra:
        verdict.problems.append(f"{what}: {len(extra)} keys never produced, e.g. {sorted(extra, key=str)[:3]}")
    strict = exact or name in ("min", "max")
    bad = [key for key in expected if key in found
           and (found[key] != expected[key] if strict else found[key] < expected[key])]
    if bad:
        key = sorted(bad, key=str)[0]
        verdict.problems.append(f"{what}: {len(bad)} keys {'differ' if strict else 'fall short'}, e.g. "
                                f"{key}: {found[key]} where {expected[key]} was expected")


def _first_difference(expected: list[int], found: list[int]) -> str:
    for i, (a, b) in enumerate(zip(expected, found, strict=False)):
        if a != b:
            return f"update {i}: {b} where {a} was expected"
    return f"update {min(len(expected), len(found))} (one list is a prefix of the other)"


def read_outputs(bootstrap: str, suffix: str) -> dict[str, dict[StateKey, list[int]]]:
    """The smoke application's output topics, by output name."""
    outputs = {"echo": read_topic(bootstrap, f"{ECHO}{suffix}")}
    for name in (*AGGREGATES, WINDOWED):
        outputs[name] = read_topic(bootstrap, f"smoke-{name}{suffix}", windowed=name == WINDOWED)
    return outputs

