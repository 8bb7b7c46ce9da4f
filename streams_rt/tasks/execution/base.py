"""What every executable node shares: one node per topology node per task, taking a Chunk of records
and forwarding Chunks to its children. Record-at-a-time nodes (user functions) take the chunk's rows
and run the function once per record in one comprehension; column nodes run Arrow kernels on whole
columns. Fed one record at a time (`depth_first`), the same nodes give Kafka's depth-first order.

An exception in user code becomes a UserCodeError naming the node and the record it failed on (whose
source index leads the runner back to the input record's topic, partition and offset). Nodes that
handle a whole chunk in one step find the failing record by running the step again record by record,
which only happens on that failure path."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from streams_rt.tasks.execution.chunk import Chunk, Rec

log = logging.getLogger(__name__)


class UserCodeError(Exception):
    """User code (or a serde, or a column operation) raised while node `node` processed `record`."""

    def __init__(self, node: str, record: Rec, cause: BaseException) -> None:
        super().__init__(f"{node} failed on record (key={_short(record[0])}, value={_short(record[1])}, "
                         f"timestamp={record[2]}): {type(cause).__name__}: {cause}")
        self.node, self.record, self.cause = node, record, cause


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class Exec:
    columnar = False  # takes whole columns (Arrow) rather than rows: its source decodes to Arrow

    def __init__(self, name: str) -> None:
        self.name = name
        self.children: list[Exec] = []
        # The largest record timestamp this node has seen (-1: none), for nodes that act on stream
        # time (windows' grace). Kept in the task's batch record, so a task that moves or restarts
        # judges late records as it would have where it was.
        self.stream_time_ms = -1
        # Depth-first: each record goes through the whole subgraph below before the next one, as
        # in Kafka. Chunks are faster; the runner turns this on where paths meet again (a merge,
        # two sinks of one topic), since there a chunk at a time would reorder records.
        self.depth_first = False

    def process(self, chunk: Chunk) -> None:
        raise NotImplementedError

    def forward(self, chunk: Chunk) -> None:
        if not len(chunk):
            return
        if self.depth_first and (len(chunk) > 1 or len(self.children) > 1):
            for one in chunk.singles():
                for child in self.children:
                    child.process(one)
            return
        for child in self.children:
            child.process(chunk)

    def forward_rows(self, rows: list[Rec]) -> None:
        if rows:
            self.forward(Chunk.from_rows(rows))

    def close(self) -> None:
        """Release what the node holds (user processors are closed)."""

    def saved_times(self) -> dict[str, int]:
        """The times this node keeps across batches (its stream time, if it has seen a record), by
        name: the runner keeps them in the task's batch record with each commit."""
        return {self.name: self.stream_time_ms} if self.stream_time_ms >= 0 else {}

    def restore_times(self, times: Mapping[str, int]) -> None:
        """Times as `saved_times` gave them (a restart, a moved task, a failed batch)."""
        self.stream_time_ms = times.get(self.name, -1)

    def abort(self) -> None:
        """A failed batch: drop what the node derived from the batch's records (its stores are
        rolled back by the task)."""

    def _locate(self, records: list[Rec], call: Callable[[Rec], Any], cause: BaseException) -> UserCodeError:
        """The failure of a whole-chunk step, pinned to the first record the step fails on again."""
        for record in records:
            try:
                call(record)
            except Exception as again:  # noqa: BLE001 - this is the user's exception, reported
                return UserCodeError(self.name, record, again)
        return UserCodeError(self.name, records[0] if records else (None, None, -1, -1), cause)


class PassthroughExec(Exec):
    def __init__(self, name: str, op: object = None) -> None:
        super().__init__(name)

    def process(self, chunk: Chunk) -> None:
        self.forward(chunk)


class SkipCounter:
    """Records an operator drops by Kafka's rules (null keys or values into an aggregation, late
    records into a closed window): counted, and logged once per node."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.count = 0

    def skip(self, why: str, records: int = 1) -> None:
        if not self.count:
            log.warning("%s: dropping a record: %s (further drops are counted, not logged)", self.node, why)
        self.count += records
