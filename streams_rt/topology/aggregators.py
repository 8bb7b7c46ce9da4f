"""Built-in aggregators (count, sum, min, max, mean): aggregations whose step the runtime knows, so it
can run them on whole batches (Arrow's hash aggregation, one store read and write per key) and
combine records before a repartition topic (partial aggregates instead of every record).

Each is defined once record by record (`step`: the meaning) and once per batch (`prepare`,
`aggregations`, `assemble`, then `merge`: the same result). A partial has the state's form, so
partials merge like states (which lets a combiner send them through a repartition topic). A mean's
state, and its table's value, is {"count": n, "sum": s, "mean": s / n}.

Null values: count counts records (a windowed count counts those with a null value too, as Kafka's
windowed count does); the others leave a null value out."""

from __future__ import annotations

import enum
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from streams_rt.topology.serdes import Serde, Serdes

# Integer sums past this magnitude are recomputed exactly (Arrow's hash sum wraps at 64 bits).
_INT64_SAFE = 2**62
_S, _C, _F = "__sum", "__count", "__float_sum"  # prepared columns


class Builtin(enum.Enum):
    COUNT = "count"
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    MEAN = "mean"

    @property
    def counts_nulls(self) -> bool:
        """Whether a record with a null value takes part (count; its KV form drops them anyway, as
        every KV aggregation of Kafka's does)."""
        return self is Builtin.COUNT

    # -- record by record ---------------------------------------------------------------------
    def step(self, state: Any, value: Any) -> Any:
        """The state after one record's value (state None: the key's first record)."""
        return self.merge(state, self.partial_of(value))

    def partial_of(self, value: Any) -> Any:
        """One record's value as a partial."""
        if self is Builtin.COUNT:
            return 1
        if self is Builtin.MEAN:
            return mean_state(float(value), 1)
        return value

    def merge(self, state: Any, partial: Any) -> Any:
        """A partial folded into a state (None: no state yet)."""
        if state is None:
            return partial
        if self is Builtin.COUNT or self is Builtin.SUM:
            return state + partial
        if self is Builtin.MIN:
            return partial if partial < state else state
        if self is Builtin.MAX:
            return partial if partial > state else state
        return mean_state(state["sum"] + partial["sum"], state["count"] + partial["count"])

    # -- per batch ----------------------------------------------------------------------------
    def prepare(self, values: pa.Array[Any], partials_in: bool) -> dict[str, pa.Array[Any]]:
        """The columns `aggregations` reduces, from a batch's values (or partials)."""
        if self is Builtin.COUNT:
            return {_C: values if partials_in else pa.repeat(1, len(values)).cast(pa.int64())}
        if self is Builtin.MEAN:
            if partials_in:
                return {_S: pc.struct_field(values, "sum"), _C: pc.struct_field(values, "count")}
            return {_S: values.cast(pa.float64()), _C: pa.repeat(1, len(values)).cast(pa.int64())}
        if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
            raise TypeError(f"{self.value} needs numeric values, got {values.type}")
        prepared = {_S: values}
        if self is Builtin.SUM and pa.types.is_integer(values.type):
            prepared[_F] = values.cast(pa.float64())
        return prepared

    def aggregations(self) -> list[Any]:
        """(column, kernel) pairs for pyarrow's TableGroupBy.aggregate."""
        kernel = {Builtin.MIN: "min", Builtin.MAX: "max"}.get(self, "sum")
        if self is Builtin.COUNT:
            return [(_C, "sum")]
        if self is Builtin.MEAN:
            return [(_S, "sum"), (_C, "sum")]
        return [(_S, kernel)] + ([(_F, "sum")] if self is Builtin.SUM else [])

    def assemble(self, grouped: pa.Table) -> list[Any]:
        """Each group's partial, from the table `aggregations` made (columns `<column>_<kernel>`)."""
        if self is Builtin.COUNT:
            return list(grouped.column(f"{_C}_sum").to_pylist())
        if self is Builtin.MEAN:
            sums = cast(list[float], grouped.column(f"{_S}_sum").to_pylist())
            counts = cast(list[int], grouped.column(f"{_C}_sum").to_pylist())
            return [mean_state(s, c) for s, c in zip(sums, counts, strict=True)]
        kernel = {Builtin.MIN: "min", Builtin.MAX: "max"}.get(self, "sum")
        partials = grouped.column(f"{_S}_{kernel}").to_pylist()
        if self is Builtin.SUM and f"{_F}_sum" in grouped.column_names:
            floats = grouped.column(f"{_F}_sum").to_pylist()
            if any(f is not None and abs(f) >= _INT64_SAFE for f in floats):
                raise OverflowError("a sum of integers passes 64 bits: sum them as float64 values")
        return partials

    # -- the store ----------------------------------------------------------------------------
    def result_serde(self, values: Serde[Any]) -> Serde[Any]:
        """The serde of the aggregation's state (its store's values, its table's values)."""
        if self is Builtin.COUNT:
            return Serdes.int64()
        if self is Builtin.MEAN:
            return Serdes.json()
        return values


def mean_state(total: float, count: int) -> dict[str, Any]:
    """A mean's state, as its table's value: the count and sum it covers, and their quotient."""
    return {"count": count, "sum": float(total), "mean": float(total) / count}
