"""Stateless nodes that run a user's Python function once per record: the chunk's rows go through one
comprehension, so per record only the user's function runs."""

from __future__ import annotations

from streams_rt.tasks.execution.base import Exec, UserCodeError
from streams_rt.tasks.execution.chunk import Chunk, Rec
from streams_rt.topology.nodes import Branch, Filter, FlatMap, FlatMapValues, Map, MapValues, Peek, SelectKey


class FilterExec(Exec):
    def __init__(self, name: str, op: Filter) -> None:
        super().__init__(name)
        assert callable(op.predicate)
        self.predicate = op.predicate

    def process(self, chunk: Chunk) -> None:
        predicate, records = self.predicate, chunk.rows()
        try:
            kept = [r for r in records if predicate(r[0], r[1])]
        except Exception as e:
            raise self._locate(records, lambda r: predicate(r[0], r[1]), e) from e
        if len(kept) == len(records):
            self.forward(chunk)
        else:
            self.forward_rows(kept)


class MapExec(Exec):
    def __init__(self, name: str, op: Map) -> None:
        super().__init__(name)
        self.mapper = op.mapper

    def process(self, chunk: Chunk) -> None:
        mapper, records = self.mapper, chunk.rows()
        try:
            mapped = [(k, v, r[2], r[3]) for r in records for k, v in (mapper(r[0], r[1]),)]
        except Exception as e:
            raise self._locate(records, lambda r: [(k, v) for k, v in (mapper(r[0], r[1]),)], e) from e
        self.forward_rows(mapped)


class MapValuesExec(Exec):
    def __init__(self, name: str, op: MapValues) -> None:
        super().__init__(name)
        assert callable(op.mapper)
        self.mapper = op.mapper

    def process(self, chunk: Chunk) -> None:
        mapper, records = self.mapper, chunk.rows()
        try:
            mapped = [(r[0], mapper(r[1]), r[2], r[3]) for r in records]
        except Exception as e:
            raise self._locate(records, lambda r: mapper(r[1]), e) from e
        self.forward_rows(mapped)


class SelectKeyExec(Exec):
    def __init__(self, name: str, op: SelectKey) -> None:
        super().__init__(name)
        assert callable(op.mapper)
        self.mapper = op.mapper

    def process(self, chunk: Chunk) -> None:
        mapper, records = self.mapper, chunk.rows()
        try:
            keyed = [(mapper(r[0], r[1]), r[1], r[2], r[3]) for r in records]
        except Exception as e:
            raise self._locate(records, lambda r: mapper(r[0], r[1]), e) from e
        self.forward_rows(keyed)


class FlatMapExec(Exec):
    def __init__(self, name: str, op: FlatMap) -> None:
        super().__init__(name)
        self.mapper = op.mapper

    def process(self, chunk: Chunk) -> None:
        mapper, records = self.mapper, chunk.rows()
        try:
            mapped = [(k, v, r[2], r[3]) for r in records for k, v in mapper(r[0], r[1])]
        except Exception as e:
            raise self._locate(records, lambda r: [(k, v) for k, v in mapper(r[0], r[1])], e) from e
        self.forward_rows(mapped)


class FlatMapValuesExec(Exec):
    def __init__(self, name: str, op: FlatMapValues) -> None:
        super().__init__(name)
        assert callable(op.mapper)
        self.mapper = op.mapper

    def process(self, chunk: Chunk) -> None:
        mapper, records = self.mapper, chunk.rows()
        try:
            mapped = [(r[0], v, r[2], r[3]) for r in records for v in mapper(r[1])]
        except Exception as e:
            raise self._locate(records, lambda r: list(mapper(r[1])), e) from e
        self.forward_rows(mapped)


class PeekExec(Exec):
    def __init__(self, name: str, op: Peek) -> None:
        super().__init__(name)
        self.action = op.action

    def process(self, chunk: Chunk) -> None:
        action = self.action
        for record in chunk.rows():
            try:
                action(record[0], record[1])
            except Exception as e:
                raise UserCodeError(self.name, record, e) from e
        self.forward(chunk)


class BranchExec(Exec):
    def __init__(self, name: str, op: Branch) -> None:
        super().__init__(name)
        self.predicates = op.predicates
        self.has_default = op.has_default

    def process(self, chunk: Chunk) -> None:
        routed: list[list[Rec]] = [[] for _ in self.children]
        for record in chunk.rows():
            branch = self._branch_of(record)
            if branch is None:
                continue
            if self.depth_first:
                self.children[branch].process(Chunk.from_rows([record]))
            else:
                routed[branch].append(record)
        for child, rows in zip(self.children, routed, strict=True):
            if rows:
                child.process(Chunk.from_rows(rows))

    def _branch_of(self, record: Rec) -> int | None:
        """The child of the first predicate that holds, else the default one, if any."""
        try:
            for i, predicate in enumerate(self.predicates):
                if predicate(record[0], record[1]):
                    return i
        except Exception as e:
            raise UserCodeError(self.name, record, e) from e
        return len(self.children) - 1 if self.has_default else None
