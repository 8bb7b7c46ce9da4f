"""Word count: lines in, a running count per word out, through a repartition topic (group_by the
word), with the counts in a queryable store `word-counts`. `make demo` runs it:

    python examples/word_count.py [--seconds N] [--bootstrap HOST:PORT]

It starts the embedded broker (unless --bootstrap), produces sample lines in the background, runs
the topology in Spark (local[2]) on two task hosts with one standby per task, shows progress, and
prints the top words when it stops (Ctrl-C, or after 60 s when stdin is not a terminal)."""

from __future__ import annotations

import itertools
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streams_rt.topology import Serdes, StreamsBuilder, Topology, Value, Words

WORDS = ("stream state task host batch spark kafka table window join store change log standby "
         "restore commit offset partition record topic key value").split()


def topology(lines: str = "text-lines", counts: str = "word-counts") -> Topology:
    """Column operations throughout: the words are split, re-keyed and counted on whole batches, and
    each task sends one partial count per word and batch through the repartition topic."""
    builder = StreamsBuilder()
    words = builder.stream(lines, Serdes.string(), Serdes.string()).flat_map_values(Words())
    table = words.group_by(Value(), Serdes.string(), name="words").count("word-counts")
    table.to_stream().to(counts, Serdes.string(), Serdes.int64())
    return builder.build()


def sample(topic: Callable[[str], str]) -> Iterator[tuple[str, tuple[str | None, bytes, int]]]:
    rng = random.Random(42)
    for i in itertools.count():
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        yield topic("text-lines"), (f"line-{i}", line.encode(), int(time.time() * 1000))


def summary(rows: list[Any]) -> str:
    latest: dict[str, int] = {}
    for row in rows:
        latest[row.key] = max(latest.get(row.key, 0), row.value)
    top = sorted(latest.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    return ("top words (from the live counts, store `word-counts`):\n"
            + "\n".join(f"  {word:>10} {count:>8,}" for word, count in top))


def main(argv: list[str] | None = None, spark: Any = None, keep_inputs: bool = False) -> Any:
    from examples.runner import Example, arguments, run

    example = Example(
        name="word-count", topology="examples.word_count:topology",
        inputs={"text-lines": 4}, outputs={"word-counts": 4}, sample=sample, summary=summary,
        properties={"num.standby.replicas": 1, "local.task.hosts": 2},
        topology_args=lambda topic: {"lines": topic("text-lines"), "counts": topic("word-counts")},
        store="word-counts", sample_key="stream",
    )
    return run(example, arguments(__doc__.splitlines()[0], argv), spark, keep_inputs)


if __name__ == "__main__":
    from examples.runner import script

    script(main)
