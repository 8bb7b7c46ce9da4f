"""Clients that hold a replica of every stateful task whatever the placement, so that each task such a
client runs is a standby less there: the stateful quotas (quotas.py) can then give the ceils where the
standbys would pile up.

A client holds every task when every client holds every task (num.standby.replicas >= clients - 1), or
when it is the only client with its value of a rack-aware tag key and a task has at least as many
replicas as the key has values: the tag rule puts one of each task's replicas on every value, so on
it (a one-client zone; a model: with two keys the placement may leave a value uncovered). Its
standbys are then the stateful tasks less its actives. The other clients share the remaining
standbys; their level is taken as that share's average per capacity unit."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .model import AssignmentConfigs, ClientState


@dataclass(frozen=True)
class ForcedReplicas:
    """holds_all[c]: client c holds a replica of every stateful task; replicas: per task, the active
    included."""

    holds_all: tuple[bool, ...]
    replicas: int

    @classmethod
    def of(cls, clients: Sequence[ClientState], configs: AssignmentConfigs) -> ForcedReplicas | None:
        """None where no client is known to hold every task (or there are no standbys)."""
        n = len(clients)
        standbys = min(configs.num_standby_replicas, n - 1)
        if standbys <= 0:
            return None
        if n - 1 <= configs.num_standby_replicas:
            return cls((True,) * n, 1 + standbys)
        holds = [False] * n
        for key in configs.rack_aware_assignment_tags:
            values = Counter(s.tags.get(key) for s in clients)
            if 1 + standbys >= len(values):
                for c, s in enumerate(clients):
                    holds[c] = holds[c] or values[s.tags.get(key)] == 1
        return cls(tuple(holds), 1 + standbys) if any(holds) else None

    @property
    def everywhere(self) -> bool:
        return all(self.holds_all)

    def ceils_first(self) -> tuple[bool, ...]:
        """With equal capacities, the clients to give the ceil of their share first: those holding every
        task, whose standbys lie above the average whenever some client does not (there are more
        clients than replicas). No client where every client does: whoever runs the ceils, the standbys
        are as even, so the owners keep them."""
        return () if self.everywhere else self.holds_all

    def level(self, c: int, count: int, n_tasks: int, capacities: Sequence[int]) -> Fraction:
        """Client c's standbys per capacity unit when it runs `count` of the n_tasks: exact where it holds
        every task, else the group's average."""
        if self.holds_all[c]:
            return Fraction(n_tasks - count, capacities[c])
        return Fraction(n_tasks * (self.replicas - 1), sum(capacities))

    def spread(self, counts: Sequence[int], capacities: Sequence[int]) -> Fraction:
        """max - min standbys per capacity unit when the clients run `counts` of the stateful tasks: exact
        for the clients holding every task; each other client at its share of the rest rounded down and
        up (whole standbys: three standbys over four one-thread clients leave one at 0 whatever the
        actives, so no active moves for them)."""
        n_tasks = sum(counts)
        levels = [Fraction(n_tasks - q, cap) for q, cap, h in zip(counts, capacities, self.holds_all, strict=True) if h]
        rest = [cap for cap, h in zip(capacities, self.holds_all, strict=True) if not h]
        if rest:
            forced = sum(n_tasks - q for q, h in zip(counts, self.holds_all, strict=True) if h)
            average = Fraction(n_tasks * (self.replicas - 1) - forced, sum(rest))
            levels += [Fraction(math.floor(average * cap), cap) for cap in rest]
            levels += [Fraction(math.ceil(average * cap), cap) for cap in rest]
        return max(levels) - min(levels)
