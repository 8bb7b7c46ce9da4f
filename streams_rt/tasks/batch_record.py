"""What a task keeps of the batch it applied last, in its internal store `streams-rt-batch-<subtopology>`
(changelogged, written in the batch's own commit): the offset ranges it processed and its output rows
(Arrow IPC, in chunks that stay under Kafka's default message size). A batch asked for again is
answered from here, on this host or, after a failover, on the one that restored the store."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from streams_rt.protocol import TopicPartition

CHUNK_BYTES = 512 * 1024
HEADER_KEY = b"batch"


def store_name(subtopology: int) -> str:
    return f"streams-rt-batch-{subtopology}"


def chunk_key(index: int) -> bytes:
    return b"output/%d" % index


@dataclass(frozen=True)
class LastBatch:
    ranges: dict[TopicPartition, tuple[int, int]]
    output: bytes  # Arrow IPC stream of the output rows
    chunks: int
    batch_id: int | None = None
    stream_times: dict[str, int] = field(default_factory=dict)  # per node; see SubtopologyRunner

    def table(self) -> pa.Table:
        return pa.ipc.open_stream(self.output).read_all()


def encode(ranges: Mapping[TopicPartition, tuple[int, int]], output: pa.RecordBatch,
           previous_chunks: int, batch_id: int | None = None,
           stream_times: Mapping[str, int] | None = None) -> dict[bytes, bytes | None]:
    """The store writes that record this batch (deleting chunks a larger previous output left)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, output.schema) as writer:
        writer.write_batch(output)
    data = sink.getvalue().to_pybytes()
    chunks = [data[i:i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
    header = {"ranges": [[tp.topic, tp.partition, s, e] for tp, (s, e) in sorted(ranges.items())],
              "chunks": len(chunks), "batch": batch_id, "stream_times": dict(stream_times or {})}
    writes: dict[bytes, bytes | None] = {HEADER_KEY: json.dumps(header, separators=(",", ":")).encode()}
    for i, chunk in enumerate(chunks):
        writes[chunk_key(i)] = chunk
    for i in range(len(chunks), previous_chunks):
        writes[chunk_key(i)] = None
    return writes


class CorruptBatchRecord(ValueError):
    """The stored record of the last batch cannot be read (the store is damaged)."""


def decode(get: Callable[[bytes], bytes | None]) -> LastBatch | None:
    """The last batch from the store's `get`, or None when no batch was ever applied."""
    raw = get(HEADER_KEY)
    if raw is None:
        return None
    try:
        header = json.loads(raw)
        ranges = {TopicPartition(t, int(p)): (int(s), int(e)) for t, p, s, e in header["ranges"]}
        count = int(header["chunks"])
        batch_id = _batch_id(header)
        stream_times = {str(name): int(t) for name, t in header.get("stream_times", {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CorruptBatchRecord(f"unreadable batch header: {e}") from None
    parts = []
    for i in range(count):
        chunk = get(chunk_key(i))
        if chunk is None:
            raise CorruptBatchRecord(f"batch output chunk {i} of {count} is missing")
        parts.append(chunk)
    return LastBatch(ranges, b"".join(parts), count, batch_id, stream_times)


def committed_batch_id(get: Callable[[bytes], bytes | None]) -> int | None:
    """The planner's number of the batch the store's state was committed at (None: no batch yet,
    or a planner that numbers none); reads the header only."""
    raw = get(HEADER_KEY)
    if raw is None:
        return None
    try:
        return _batch_id(json.loads(raw))
    except (ValueError, TypeError) as e:
        raise CorruptBatchRecord(f"unreadable batch header: {e}") from None


def _batch_id(header: Mapping[str, object]) -> int | None:
    found = header.get("batch")
    if found is None:
        return None
    if not isinstance(found, int) or isinstance(found, bool):
        raise ValueError(f"batch id {found!r:.40} is not an integer")
    return found
