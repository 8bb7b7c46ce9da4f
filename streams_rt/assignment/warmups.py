"""KIP-441's rule that an active task runs on the most caught-up client until its target has caught up.

When the balanced target of a task is not caught up but someone is, the task stays on the most caught-up
client (its running owner, else the caught-up client with the smallest lag); when nobody is caught up,
it goes to the client with the least lag (unless the target has no more lag than that). Either way the
move is recorded as pending. Pending moves get warm-up replicas on their targets, at most
`max.warmup.replicas` at a time; a probing rebalance later moves each task once its warm-up has caught
up."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .lag import Lags
from .ownership import NO_OWNER
from .round_inputs import RoundInputs


@dataclass(frozen=True, slots=True)
class PendingMove:
    task: int
    target: int


def gate_to_caught_up(
    inputs: RoundInputs, pool: Sequence[int], target: Sequence[int]
) -> tuple[list[int], list[PendingMove]]:
    """Returns where each task of `pool` runs this round, and the moves that wait for a warm-up."""
    owner, lags = inputs.owner, inputs.lags
    placed = list(target)
    pending: list[PendingMove] = []
    default, reports, caught_up = lags.default_caught_up, lags.reports, lags.caught_up
    for i, t in enumerate(pool):
        dest = target[i]
        if dest == owner[t]:  # staying put: running, caught up by definition
            continue
        if (default[t] and not reports[t]) or caught_up(t, dest):
            continue
        holder = _most_caught_up(t, owner[t], lags, inputs.n_clients)
        if holder is None:
            holder = _less_lag(t, dest, lags)
        if holder is not None:
            placed[i] = holder
            pending.append(PendingMove(t, dest))
    return placed, pending


def _most_caught_up(t: int, owner: int, lags: Lags, n_clients: int) -> int | None:
    """The client the task should run on while its target warms up: its running owner, else the
    caught-up client with the smallest lag (None: nobody is caught up)."""
    if owner != NO_OWNER:  # a valid owner is running it: lag -2, the best there is
        return owner
    for h in lags.holders(t):
        if lags.caught_up(t, h):
            return h
    if lags.default_caught_up[t]:  # caught up without state, unless reporting state of unknown freshness
        return next((c for c in range(n_clients) if lags.caught_up(t, c)), None)
    return None


def _less_lag(t: int, dest: int, lags: Lags) -> int | None:
    """Nobody is caught up: the client with the least lag (ties by process id), if it has less than
    dest (None: dest is as good as anyone). State of unknown freshness counts as none."""
    holders, end = lags.holders(t), lags.end[t]
    if holders and end is not None and min(lags.rank(t, holders[0]), end) < min(lags.rank(t, dest), end):
        return holders[0]
    return None


def choose_warmups(
    pending: Sequence[PendingMove],
    standby_of: Sequence[set[int]],
    waiting_standbys: Sequence[PendingMove],
    lags: Lags,
    max_warmups: int,
) -> list[PendingMove]:
    """Warm-ups, at most `max_warmups`: first for pending active moves (a target that already gets a
    standby of the task needs none), then for standby replicas waiting for their client to catch up
    (as Kafka serves active task movements before standby ones). Each kind is served most advanced
    first, so warm-ups already in flight keep their slots."""
    need = [m for m in pending if m.target not in standby_of[m.task]]
    need.sort(key=lambda m: (lags.rank(m.task, m.target), m.task))
    chosen = need[:max_warmups]
    taken = set(chosen)
    for m in waiting_standbys:  # already most advanced first
        if len(chosen) == max_warmups:
            break
        if m not in taken:
            chosen.append(m)
            taken.add(m)
    return chosen
