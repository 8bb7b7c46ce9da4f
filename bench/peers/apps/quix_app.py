"""The bench/peers workload in Quix Streams: per-key count and sum in its RocksDB state (with its
changelog topics), every update to the output topic. One process consumes with one thread; the
harness starts two in one consumer group, one per core, as the others get two.

It prints its rebalances as the Kafka Streams app does ("peers-state MS RUNNING REBALANCING" when its
input partitions are revoked, "peers-tasks MS 0_1,0_3" and "peers-state MS REBALANCING RUNNING" once
new ones are assigned; MS in epoch milliseconds) for the scale-out figure (bench/peers/scaleout.py).
Quix Streams has no public rebalance callback: the app wraps the two its consumer is given.

    python bench/peers/apps/quix_app.py BOOTSTRAP INPUT OUTPUT STATE_DIR GROUP"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from quixstreams import Application, State


def add(amount: str, state: State) -> str:
    count, total = state.get("totals", (0, 0))
    count, total = count + 1, total + int(amount)
    state.set("totals", (count, total))
    return f"{count},{total}"


def reporting(source: str, on_assign: Callable[[Any, list[Any]], None], on_revoke: Callable[[Any, list[Any]], None],
              ) -> tuple[Callable[[Any, list[Any]], None], Callable[[Any, list[Any]], None]]:
    """The consumer's assign and revoke callbacks, printing the rebalance's lines for `source`."""
    def assigned(consumer: Any, partitions: list[Any]) -> None:
        on_assign(consumer, partitions)
        mine = sorted(p.partition for p in partitions if p.topic == source)
        if mine:
            now = int(time.time() * 1000)
            print(f"peers-tasks {now} {','.join(f'0_{p}' for p in mine)}", flush=True)
            print(f"peers-state {now} REBALANCING RUNNING", flush=True)

    def revoked(consumer: Any, partitions: list[Any]) -> None:
        if any(p.topic == source for p in partitions):
            print(f"peers-state {int(time.time() * 1000)} RUNNING REBALANCING", flush=True)
        on_revoke(consumer, partitions)

    return assigned, revoked


def main() -> None:
    bootstrap, source, sink, state_dir, group = sys.argv[1:6]
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest",
                      state_dir=state_dir, loglevel="WARNING", commit_interval=1.0)
    source_topic = app.topic(source, key_deserializer="str", value_deserializer="str")
    sink_topic = app.topic(sink, key_serializer="str", value_serializer="str")
    frame: Any = app.dataframe(source_topic)
    frame = frame.apply(add, stateful=True)
    frame.to_topic(sink_topic)
    app._on_assign, app._on_revoke = reporting(source, app._on_assign, app._on_revoke)
    app.run()


if __name__ == "__main__":
    main()
