"""Table nodes: a table's source (the latest value per key, in the table's store) and the stream-table
join that reads it, record by record as Kafka's KTableSource and KStreamKTableJoin."""

from __future__ import annotations

from streams_rt.tasks.execution.base import Exec, SkipCounter, UserCodeError
from streams_rt.tasks.execution.caching import CachedKeyValue
from streams_rt.tasks.execution.chunk import Chunk
from streams_rt.topology.nodes import Join


class TableSourceExec(Exec):
    """The latest value per key (None deletes); the cache forwards each change."""

    def __init__(self, name: str, table: CachedKeyValue) -> None:
        super().__init__(name)
        self.table = table
        self.skipped = SkipCounter(name)

    def process(self, chunk: Chunk) -> None:
        table = self.table
        for key, value, timestamp, _ in chunk.rows():
            if key is None:
                self.skipped.skip("null key")
                continue
            table.put(key, value, timestamp)


class JoinExec(Exec):
    """Each stream record joined with the table's current value for its key: an inner join drops
    records without one, a left join joins them with None. A null value is dropped; a null key is
    dropped by an inner join and joined with None by a left one (Kafka 3.7's KIP-962)."""

    def __init__(self, name: str, op: Join, table: CachedKeyValue) -> None:
        super().__init__(name)
        self.joiner, self.left, self.table = op.joiner, op.left, table

    def process(self, chunk: Chunk) -> None:
        table, joiner, left = self.table, self.joiner, self.left
        out = []
        for record in chunk.rows():
            key, value = record[0], record[1]
            if value is None or (key is None and not left):
                continue
            other = None if key is None else table.get(key)
            if other is None and not left:
                continue
            try:
                joined = joiner(value, other)
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
            out.append((key, joined, record[2], record[3]))
        self.forward_rows(out)
