"""The constrained linear pass of KAFKA-9987, for the uniform case: every client has the same capacity
and no client other than a task's owner holds state that should steer where the task goes.

Then the balanced assignment is known in closed form (each client gets floor or ceil of tasks/clients),
and a few linear passes reach it: keep owned tasks up to the client's quota (the ceil slots go to the
clients that own more than the floor, so nothing moves that balance does not need), then deal the rest
round-robin, in partition-major order so one partition's tasks spread over clients."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from .lag import Lags
from .ownership import NO_OWNER
from .quotas import capacity_quotas


def constrained_applies(capacities: Sequence[int], pool: Sequence[int], owner: Sequence[int], lags: Lags) -> bool:
    """True when the linear pass gives the same quality as the general path."""
    if len(set(capacities)) > 1:
        return False
    reports, default = lags.reports, lags.default_caught_up
    return not any(reports[t] and not default[t] and lags.foreign_state(t, owner[t]) for t in pool)


def constrained_assign(
    pool: Sequence[int],
    owner: Sequence[int],
    n_clients: int,
    shed_first: Callable[[int, int], bool],
    fill_key: Callable[[int], object] | None,
) -> list[int]:
    """Returns the target client of each task of `pool` (a dict would cost more: indexed by position).

    shed_first(t, c): the task can leave owner c without a warm-up, so give it up before others."""
    owned: list[list[int]] = [[] for _ in range(n_clients)]
    for t in pool:
        if owner[t] != NO_OWNER:
            owned[owner[t]].append(t)
    quotas = capacity_quotas(len(pool), [1] * n_clients, [len(o) for o in owned])
    target: dict[int, int] = {}
    unassigned: list[int] = [t for t in pool if owner[t] == NO_OWNER]
    for c, tasks in enumerate(owned):
        if len(tasks) > quotas[c]:
            tasks.sort(key=lambda t: (shed_first(t, c), t))
            unassigned.extend(tasks[quotas[c]:])
            del tasks[quotas[c]:]
        for t in tasks:
            target[t] = c
    unassigned.sort(key=fill_key)
    need = deque((c, quotas[c] - len(owned[c])) for c in range(n_clients) if quotas[c] > len(owned[c]))
    for t in unassigned:
        c, left = need.popleft()
        target[t] = c
        if left > 1:
            need.append((c, left - 1))
    return [target[t] for t in pool]
