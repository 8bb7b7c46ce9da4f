"""Lags and the caught-up rule of KIP-441.

A client is caught up on a task when it runs it as active (lag -2) or its lag is between 0 and
`acceptable.recovery.lag`. Lags are kept only for clients that reported the task; every other client
has lag = the changelog end offset sum (it holds nothing), so a task is caught up "everywhere by
default" when that end is itself acceptable. This keeps the cost linear in the reports, not
clients x tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from streams_rt.protocol import OFFSET_SUM_RUNNING_ACTIVE, TaskId

from .ownership import NO_OWNER

RUNNING = -2  # running active: lag 0 by definition
UNKNOWN = -1  # holds some state, but its offsets are unknown (-3/-4 sentinels, or pre-v7 standby)
_NOBODY: list[int] = []  # never appended to


def lag_code(end: int, offset_sum: int | None) -> int:
    """A client's lag on a stateful task from its reported offset sum (None: it reported none, so it
    holds nothing): RUNNING, UNKNOWN, or records behind. Ahead of the end counts as holding nothing
    (Kafka's rule: the changelog was truncated or recreated)."""
    if offset_sum is None:
        return end
    if offset_sum == OFFSET_SUM_RUNNING_ACTIVE:
        return RUNNING
    if offset_sum < 0:
        return UNKNOWN
    return end - offset_sum if offset_sum <= end else end


def acceptable_lag(code: int, acceptable_recovery_lag: int) -> bool:
    """The caught-up rule of KIP-441 on a lag code: running, or a known lag within the acceptable
    recovery lag. The one place the rule is written."""
    return code == RUNNING or 0 <= code <= acceptable_recovery_lag


def is_caught_up(end: int | None, offset_sum: int | None, acceptable_recovery_lag: int) -> bool:
    """The caught-up rule for callers outside the assignor: could a client that reported `offset_sum`
    (None: nothing) take the task over without restoring? A stateless task (end None) runs anywhere; a
    changelog within the acceptable lag, everywhere."""
    return end is None or acceptable_lag(lag_code(end, offset_sum), acceptable_recovery_lag)


def _rank(code: int, end: int) -> int:
    """Sort key: running first, then by lag, unknown last among holders."""
    if code == RUNNING:
        return -1
    if code == UNKNOWN:
        return end + 1
    return code


class Lags:
    """Per-task lag reports, indexed by task and client numbers."""

    def __init__(
        self,
        tasks: Sequence[TaskId],
        end_offsets: Sequence[int | None],
        offset_sums: Sequence[Mapping[TaskId, int]],
        owned_standby: Sequence[frozenset[TaskId]],
        task_number: Mapping[TaskId, int],
        owner: Sequence[int],
        ignored_claims: Sequence[Sequence[TaskId]],
        acceptable_recovery_lag: int,
    ) -> None:
        self.end = end_offsets
        self.acceptable = acceptable_recovery_lag
        reports: list[dict[int, int] | None] = [None] * len(tasks)
        unknown: set[int] = set()
        get = task_number.get
        for c, sums in enumerate(offset_sums):
            for task, offset in sums.items():
                if offset == OFFSET_SUM_RUNNING_ACTIVE:  # a running claim counts via ownership, below
                    continue
                t = get(task)
                if t is None:
                    continue
                end = end_offsets[t]
                if end is None:
                    continue
                if offset >= 0:  # lag_code, inlined: this loop runs once per report
                    code = end - offset if offset <= end else end
                else:
                    code = UNKNOWN
                    unknown.add(t)
                r = reports[t]
                if r is None:
                    r = reports[t] = {}
                r[c] = code
        self.standby_owners: list[list[int]] = [_NOBODY] * len(tasks)  # shared empty list, replaced on add
        for c, standbys in enumerate(owned_standby):
            for task in standbys:
                t = get(task)
                if t is not None and end_offsets[t] is not None:
                    owners = self.standby_owners[t]
                    if owners is _NOBODY:
                        self.standby_owners[t] = [c]
                    else:
                        owners.append(c)
                    r = reports[t]
                    if r is None:
                        reports[t] = {c: UNKNOWN}
                        unknown.add(t)
                    elif c not in r:
                        r[c] = UNKNOWN
                        unknown.add(t)
        for c, claims in enumerate(ignored_claims):  # stale owners hold state of unknown freshness
            for task in claims:
                t = get(task)
                if t is not None and end_offsets[t] is not None:
                    r = reports[t]
                    if r is None:
                        reports[t] = {c: UNKNOWN}
                        unknown.add(t)
                    elif c not in r:
                        r[c] = UNKNOWN
                        unknown.add(t)
        for t, c in enumerate(owner):
            if c != NO_OWNER and end_offsets[t] is not None:
                r = reports[t]
                if r is None:
                    reports[t] = {c: RUNNING}
                else:
                    r[c] = RUNNING
        self.reports = reports
        self.with_unknown = unknown  # tasks some client reported state of unknown freshness for (a superset)
        # Caught up without reporting anything: the lag is the whole changelog. Ends repeat: decide each once.
        verdict: dict[int | None, bool] = {None: True}  # stateless: runs anywhere
        verdict.update((e, acceptable_lag(e, acceptable_recovery_lag)) for e in set(end_offsets) if e is not None)
        self.default_caught_up = [verdict[e] for e in end_offsets]
        self._holders: list[list[int] | None] = [None] * len(tasks)

    def lag(self, t: int, c: int) -> int:
        """RUNNING, UNKNOWN, or the lag in records; stateless tasks have lag 0 everywhere."""
        end = self.end[t]
        if end is None:
            return 0
        r = self.reports[t]
        if r is not None and c in r:
            return r[c]
        return end

    def caught_up(self, t: int, c: int) -> bool:
        r = self.reports[t]
        if r is None or c not in r:  # holds nothing: the verdict on the whole changelog
            return self.default_caught_up[t]
        return acceptable_lag(r[c], self.acceptable)

    def rank(self, t: int, c: int) -> int:
        end = self.end[t]
        return 0 if end is None else _rank(self.lag(t, c), end)

    def holders(self, t: int) -> list[int]:
        """Clients that reported state for the task, most caught up first (ties by process id)."""
        cached = self._holders[t]
        if cached is None:
            r, end = self.reports[t], self.end[t]
            if not r or end is None:  # stateless tasks have no reports
                cached = []
            elif len(r) == 1:
                cached = list(r)
            elif len(r) == 2:  # the usual case (owner and one standby): no sort
                c1, c2 = r
                cached = [c1, c2] if (_rank(r[c1], end), c1) < (_rank(r[c2], end), c2) else [c2, c1]
            else:
                cached = sorted(r, key=lambda c: (_rank(r[c], end), c))
            self._holders[t] = cached
        return cached

    def has_other_caught_up(self, t: int, c: int, n_clients: int) -> bool:
        """Could the task move away from client c without a warm-up?"""
        if self.default_caught_up[t]:
            return n_clients > 1
        return any(h != c and self.caught_up(t, h) for h in self.holders(t))
