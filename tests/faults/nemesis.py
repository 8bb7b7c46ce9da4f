"""The soak's nemesis, after Jepsen's: a seeded schedule of faults, pure, so that a seed replays a
run's faults in the same order at the same moments. Each fault comes 15-35 s after the previous
one has settled; a joined member leaves at the next `member` fault."""

from __future__ import annotations

import random
from dataclasses import dataclass

KINDS = ("kill", "pause", "broker", "member")


@dataclass(frozen=True)
class Fault:
    at_s: float  # seconds into the run, at the earliest (the previous fault settles first)
    kind: str  # kill: kill -9 of a host; pause: SIGSTOP past the session timeout, then SIGCONT;
    #            broker: the broker bounced (hard: kill -9); member: a host joins, or the one that joined leaves
    host: int  # which of the hosts (an index into the sorted live hosts, modulo their count)
    hard: bool  # broker: kill -9 rather than SIGTERM


def schedule(seed: int, duration_s: float, kinds: tuple[str, ...] = KINDS) -> list[Fault]:
    """The faults of a run of `duration_s` seconds, every kind in `kinds` at least once when the run
    is long enough; the same for the same seed."""
    rng = random.Random(seed)
    faults, at = [], rng.uniform(10, 20)
    order = list(kinds)
    rng.shuffle(order)
    while at < duration_s - 20:
        kind = order.pop() if order else rng.choice(kinds)
        faults.append(Fault(round(at, 1), kind, rng.randrange(3), rng.random() < 0.5))
        at += rng.uniform(15, 35)
    return faults
