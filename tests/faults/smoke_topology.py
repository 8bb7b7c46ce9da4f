"""The fault suite's application, after Kafka's SmokeTestClient: from one input topic of
(string key, int64 value) records it keeps per-key min, max, sum and count, a tumbling-window
count, and echoes every record. Every aggregate writes each update to its own output topic and
store (with a changelog), so the verifier can check both what was emitted and what was kept. The
aggregations are the built-in ones, which run per batch (the columnar path)."""

from __future__ import annotations

from streams_rt.topology import Serdes, StreamsBuilder, Topology, TumblingWindows

S, I64 = Serdes.string(), Serdes.int64()
# Grace far beyond the workload's span: no record is ever late, so the reference is a plain count.
WINDOWS = TumblingWindows(10_000, grace_ms=24 * 3600 * 1000)
INPUT = "smoke-data"
ECHO = "smoke-echo"
AGGREGATES = ("min", "max", "sum", "cnt")  # store names; output topic smoke-<store>
WINDOWED = "wcnt"
OUTPUTS = (ECHO, *(f"smoke-{name}" for name in (*AGGREGATES, WINDOWED)))


def smoke(suffix: str = "") -> Topology:
    b = StreamsBuilder()
    data = b.stream(f"{INPUT}{suffix}", S, I64)
    data.to(f"{ECHO}{suffix}", S, I64)
    grouped = data.group_by_key()
    grouped.min("min").to_stream().to(f"smoke-min{suffix}", S, I64)
    grouped.max("max").to_stream().to(f"smoke-max{suffix}", S, I64)
    grouped.sum("sum").to_stream().to(f"smoke-sum{suffix}", S, I64)
    grouped.count("cnt").to_stream().to(f"smoke-cnt{suffix}", S, I64)
    grouped.windowed_by(WINDOWS).count(WINDOWED).to_stream().to(f"smoke-{WINDOWED}{suffix}", None, I64)
    return b.build()
