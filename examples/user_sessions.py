"""Visits per user session: a session-window count (sessions end after 3 s without a visit, 1 s
grace) with suppress(until_window_closes), so each session's final count is written once, when the
session has closed.

    python examples/user_sessions.py [--seconds N] [--bootstrap HOST:PORT]"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streams_rt.topology import (
    BufferConfig,
    Serdes,
    SessionWindows,
    StreamsBuilder,
    Suppressed,
    Topology,
    Windowed,
)

USERS = [f"user-{i}" for i in range(40)]
GAP_MS, GRACE_MS = 3_000, 1_000
ACTIVE_S, CYCLE_S = 3, 8  # each user visits for 3 s out of every 8 (its own phase): sessions of ~3 s


def _session(windowed: Windowed, count: int) -> tuple[str, dict[str, int]]:
    return windowed.key, {"start": windowed.start, "end": windowed.end, "visits": count}


def topology(visits: str = "visits", sessions: str = "sessions") -> Topology:
    builder = StreamsBuilder()
    (builder.stream(visits, Serdes.string(), Serdes.string()).group_by_key()
     .windowed_by(SessionWindows.of_inactivity_gap_and_grace(GAP_MS, GRACE_MS)).count("visits-per-session")
     .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
     .to_stream().map(_session, Serdes.string(), Serdes.json()).to(sessions))
    return builder.build()


def active(user: int, second: int) -> bool:
    return (second + 5 * user) % CYCLE_S < ACTIVE_S


def sample(topic: Callable[[str], str]) -> Iterator[tuple[str, tuple[str | None, bytes, int]]]:
    rng = random.Random(5)
    while True:
        now = int(time.time() * 1000)
        users = [u for u in range(len(USERS)) if active(u, now // 1000)]
        user = USERS[rng.choice(users)]
        yield topic("visits"), (user, f"/page/{rng.randint(1, 30)}".encode(), now)


def summary(rows: list[Any]) -> str:
    sessions = [(row.key, json.loads(row.value)) for row in rows]
    longest = sorted(sessions, key=lambda s: -s[1]["visits"])[:10]
    return (f"{len(sessions):,} closed sessions; the busiest:\n"
            + "\n".join(f"  {user:>8} {s['visits']:>5,} visits in {(s['end'] - s['start']) / 1000:4.1f} s"
                        for user, s in longest))


def main(argv: list[str] | None = None, spark: Any = None, keep_inputs: bool = False) -> Any:
    from examples.runner import Example, arguments, run

    example = Example(
        name="user-sessions", topology="examples.user_sessions:topology",
        inputs={"visits": 2}, outputs={"sessions": 2}, sample=sample, summary=summary,
        topology_args=lambda topic: {"visits": topic("visits"), "sessions": topic("sessions")},
    )
    return run(example, arguments(__doc__.splitlines()[0], argv), spark, keep_inputs)


if __name__ == "__main__":
    from examples.runner import script

    script(main)
