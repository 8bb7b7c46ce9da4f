"""Page views per page per minute: a windowed count (tumbling 1-minute windows, 10 s grace).

    python examples/page_views.py [--seconds N] [--bootstrap HOST:PORT]"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streams_rt.topology import Serdes, StreamsBuilder, Topology, TumblingWindows

PAGES = [f"/page/{i}" for i in range(12)]


def topology(views: str = "page-views", counts: str = "views-per-minute") -> Topology:
    builder = StreamsBuilder()
    by_page = builder.stream(views, Serdes.string(), Serdes.string()).group_by_key()
    windowed = by_page.windowed_by(TumblingWindows(60_000, grace_ms=10_000)).count("views-per-minute")
    windowed.to_stream().to(counts, value_serde=Serdes.int64())
    return builder.build()


def sample(topic: Callable[[str], str]) -> Iterator[tuple[str, tuple[str | None, bytes, int]]]:
    rng = random.Random(7)
    while True:
        page = rng.choice(PAGES)
        yield topic("page-views"), (page, f"user-{rng.randint(1, 500)}".encode(), int(time.time() * 1000))


def summary(rows: list[Any]) -> str:
    latest: dict[tuple[str, Any], int] = {}
    for row in rows:
        key = (row.key.key, row.key.start)
        latest[key] = max(latest.get(key, 0), row.value)
    top = sorted(latest.items(), key=lambda kv: -kv[1])[:10]
    return ("busiest page-minutes (store `views-per-minute`):\n"
            + "\n".join(f"  {page:>10} {start:%H:%M} {count:>6,}" for (page, start), count in top))


def main(argv: list[str] | None = None, spark: Any = None, keep_inputs: bool = False) -> Any:
    from examples.runner import Example, arguments, run

    example = Example(
        name="page-views", topology="examples.page_views:topology",
        inputs={"page-views": 2}, outputs={"views-per-minute": 2}, sample=sample, summary=summary,
        topology_args=lambda topic: {"views": topic("page-views"), "counts": topic("views-per-minute")},
    )
    return run(example, arguments(__doc__.splitlines()[0], argv), spark, keep_inputs)


if __name__ == "__main__":
    from examples.runner import script

    script(main)
