"""Clicks attributed to ad impressions: a windowed stream-stream left join (a click joins the
impression it follows within 5 s; an impression nobody clicked is emitted once, with no click,
after its window and grace have passed, never before a late click).

    python examples/ad_clicks.py [--seconds N] [--bootstrap HOST:PORT]"""

from __future__ import annotations

import collections
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streams_rt.topology import JoinWindows, Serdes, StreamsBuilder, Topology

ADS = [f"ad-{i}" for i in range(8)]
WINDOW_MS, GRACE_MS = 5_000, 5_000


def topology(impressions: str = "impressions", clicks: str = "clicks", attributed: str = "attributed") -> Topology:
    """Both topics keyed by impression id (so they are co-partitioned); values JSON."""
    builder = StreamsBuilder()
    shown = builder.stream(impressions, Serdes.string(), Serdes.json())
    clicked = builder.stream(clicks, Serdes.string(), Serdes.json())
    shown.left_join(clicked, lambda impression, click: {**impression, "clicked": click is not None},
                    Serdes.json(), windows=JoinWindows(0, WINDOW_MS, GRACE_MS), store_name="attribution"
                    ).to(attributed, Serdes.string(), Serdes.json())
    return builder.build()


def sample(topic: Callable[[str], str]) -> Iterator[tuple[str, tuple[str | None, bytes, int]]]:
    """Impressions, about a third of them clicked a few hundred records (well under a second) later."""
    rng = random.Random(11)
    pending: list[tuple[int, str, str]] = []  # (due record number, impression id, ad)
    number = 0
    while True:
        number += 1
        if pending and pending[0][0] <= number:
            _, impression, ad = pending.pop(0)
            click = Serdes.json().serialize({"ad": ad}) or b""
            yield topic("clicks"), (impression, click, int(time.time() * 1000))
            continue
        impression, ad = f"imp-{number}", rng.choice(ADS)
        yield topic("impressions"), (impression, Serdes.json().serialize({"ad": ad}) or b"", int(time.time() * 1000))
        if rng.random() < 0.3:
            pending.append((number + rng.randint(1, 200), impression, ad))


def summary(rows: list[Any]) -> str:
    shown: dict[str, collections.Counter[bool]] = collections.defaultdict(collections.Counter)
    for row in rows:
        value = json.loads(row.value)
        shown[value["ad"]][value["clicked"]] += 1
    return ("click-through per ad (impressions whose window has closed or that were clicked):\n"
            + "\n".join(f"  {ad:>6} {c[True]:>6,} clicked {c[False]:>7,} not  "
                        f"{c[True] / max(1, c[True] + c[False]):6.1%}" for ad, c in sorted(shown.items())))


def main(argv: list[str] | None = None, spark: Any = None, keep_inputs: bool = False) -> Any:
    from examples.runner import Example, arguments, run

    example = Example(
        name="ad-clicks", topology="examples.ad_clicks:topology",
        inputs={"impressions": 2, "clicks": 2}, outputs={"attributed": 2}, sample=sample, summary=summary,
        topology_args=lambda topic: {"impressions": topic("impressions"), "clicks": topic("clicks"),
                                     "attributed": topic("attributed")},
    )
    return run(example, arguments(__doc__.splitlines()[0], argv), spark, keep_inputs)


if __name__ == "__main__":
    from examples.runner import script

    script(main)
