"""The bench/peers workload in Quix Streams: per-key count and sum in its RocksDB state (with its
changelog topics), every update to the output topic. One process consumes with one thread; the
harness starts two in one consumer group, one per core, as the others get two.

    python bench/peers/apps/quix_app.py BOOTSTRAP INPUT OUTPUT STATE_DIR GROUP"""

from __future__ import annotations

import sys
from typing import Any

from quixstreams import Application, State


def add(amount: str, state: State) -> str:
    count, total = state.get("totals", (0, 0))
    count, total = count + 1, total + int(amount)
    state.set("totals", (count, total))
    return f"{count},{total}"


def main() -> None:
    bootstrap, source, sink, state_dir, group = sys.argv[1:6]
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest",
                      state_dir=state_dir, loglevel="WARNING", commit_interval=1.0)
    source_topic = app.topic(source, key_deserializer="str", value_deserializer="str")
    sink_topic = app.topic(sink, key_serializer="str", value_serializer="str")
    frame: Any = app.dataframe(source_topic)
    frame = frame.apply(add, stateful=True)
    frame.to_topic(sink_topic)
    app.run()


if __name__ == "__main__":
    main()
