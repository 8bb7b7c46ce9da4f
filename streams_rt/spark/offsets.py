"""The streams_rt source's offsets, pure: `{"__batch__": B, "<topic>:<partition>": offset, ...}` over
every input partition of every task (repartition topics included), and the micro-batch number B.

Spark's Python stream reader is never told the batch id, yet interactive queries answer with the
batch a task's state was committed at, and `at_batch` names Spark's batches. So the offset carries a
counter that moves exactly as Spark's batch id does: `latestOffset` returns a new end (the
counter one past its start's) only when some position moves (or a task must catch up on a batch it
sat out: the same positions under the next number), and Spark runs a micro-batch exactly
for each new end; an unchanged start means no batch, and no number is used up. The counter lives in
Spark's offset log, so a driver restarting from its checkpoint resumes it (a batch re-run after a
crash keeps its number; the next one gets the following number), never reusing an old id. Spark's
no-data micro-batches (a stateful operator with a watermark downstream) are numbered by Spark but
never planned by the source: each puts Spark's ids one further ahead of these (docs/iq.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streams_rt.protocol import TopicPartition

BATCH_KEY = "__batch__"
BEFORE_FIRST_BATCH = -1  # the initial offset's number: the first batch is 0, as Spark's


def encode_offsets(positions: Mapping[TopicPartition, int], batch: int) -> dict[str, int]:
    """An offset as Spark keeps it (a JSON object; the same positions give the same JSON)."""
    return {BATCH_KEY: batch, **{f"{tp.topic}:{tp.partition}": offset for tp, offset in sorted(positions.items())}}


def decode_offsets(raw: Mapping[str, Any]) -> dict[TopicPartition, int]:
    """The positions of an offset (its batch number left out)."""
    out = {}
    for key, offset in raw.items():
        if key == BATCH_KEY:
            continue
        topic, _, partition = str(key).rpartition(":")
        out[TopicPartition(topic, int(partition))] = int(offset)
    return out


def batch_of(raw: Mapping[str, Any]) -> int:
    """The micro-batch an end offset closes (its number); an offset written before batches were
    numbered counts as the initial one."""
    return int(raw.get(BATCH_KEY, BEFORE_FIRST_BATCH))


def next_end(start: Mapping[str, Any], latest: Mapping[TopicPartition, int], catch_up: bool = False) -> dict[str, Any]:
    """What `latestOffset` returns: `start` itself when no position moved (Spark then runs no
    batch) and no task must catch up on a batch it sat out, else the latest positions under the
    next batch number."""
    if latest == decode_offsets(start) and not catch_up:
        return dict(start)
    return encode_offsets(latest, batch_of(start) + 1)
