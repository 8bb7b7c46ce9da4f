"""How evenly the standbys can spread once the stateful actives are counted, for choosing the stateful
quotas (quotas.py) among those Kafka's criterion leaves as they are.

A client holds no standby of a task it runs, so a client running many tasks has room for few standbys:
7 tasks, one standby, capacities 1, 1 and 3 running 1, 1 and 5 leave the three-thread client room for
2 standbys and the one-thread clients 5 between them, 2 1/3 per thread apart, where 2, 1 and 4 let them
lie 1 apart (random seed 169 of the quality bench, as Kafka's assignor has them). A client holding a
replica of every task (forced_replicas.py) holds exactly the tasks it does not run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .forced_replicas import ForcedReplicas
from .model import AssignmentConfigs, ClientState
from .thread_balance import narrowest_window


@dataclass(frozen=True)
class StandbyRoom:
    """holds_all[c]: client c holds a replica of every stateful task; replicas: per task, the active
    included."""

    holds_all: tuple[bool, ...]
    replicas: int

    @classmethod
    def of(cls, clients: Sequence[ClientState], configs: AssignmentConfigs) -> StandbyRoom | None:
        """None where there are no standbys."""
        standbys = min(configs.num_standby_replicas, len(clients) - 1)
        if standbys <= 0:
            return None
        forced = ForcedReplicas.of(clients, configs)
        return cls(forced.holds_all if forced is not None else (False,) * len(clients), 1 + standbys)

    def spread(self, counts: Sequence[int], capacities: Sequence[int]) -> Fraction | None:
        """The lowest max - min of standbys per capacity unit when the clients run `counts` of the
        stateful tasks, each client holding at most the tasks it does not run (exactly those where it
        holds every task); tag rules and whole tasks aside, so a lower bound. None: no room for all."""
        n_tasks = sum(counts)
        hi = [n_tasks - q for q in counts]
        lo = [h if f else 0 for h, f in zip(hi, self.holds_all, strict=True)]
        standbys = n_tasks * (self.replicas - 1)
        if not sum(lo) <= standbys <= sum(hi):
            return None
        window = narrowest_window(standbys, capacities, [0] * len(counts), lo, hi)
        return None if window is None else window[1] - window[0]
