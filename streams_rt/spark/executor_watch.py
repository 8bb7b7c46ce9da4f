"""What the driver does as Spark's executor set changes: the pure core of the executor watcher.

Spark starts a task host only where a task of ours runs, and it schedules reads wherever it likes:
an executor added after the start-up job (a replacement for a killed one, dynamic allocation) may
get no read for a long time, so no host. And when Spark decommissions an executor it signals only
the executor's JVM, not our host (a separate process). The driver therefore compares snapshots of
the executor set (id -> decommissioning?) and answers with actions:

- `StartHost`: executors with no host yet (the driver runs a small job that starts theirs),
  again after `retry_s` while one is still missing;
- `DrainHost`: an executor Spark is decommissioning whose host is known: ask that host to drain
  (once); an executor decommissioning with no host gets none started;
- `Forget`: an executor that left the set, with its host if it had one (one log line);
- `HostDied`: a host whose executor is still there but which has not been a member of the group for
  `dead_after_s` (killed, crashed): it is forgotten, so a `StartHost` for its executor follows
  (the start-up job starts a new host there, in the same state directory, or finds the old one
  alive). Deaths in a row back off exponentially (from `retry_s`, up to `max_backoff_s`); a host
  that was a member for `stable_after_s` starts that count over. `hosts_found` names the
  executors whose host it replaced (a new pid), for the driver to log and count."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

HostRecord = Mapping[str, Any]  # a host's ready record (executor_hosts.ensure_host), with its executor_id


@dataclass(frozen=True)
class StartHost:
    executor_ids: tuple[str, ...]


@dataclass(frozen=True)
class DrainHost:
    executor_id: str
    host: HostRecord


@dataclass(frozen=True)
class HostDied:
    executor_id: str
    host: HostRecord
    restart_in_s: float  # the back-off before its executor's host is asked for again


@dataclass(frozen=True)
class Forget:
    executor_id: str
    host: HostRecord | None
    decommissioned: bool  # it was being decommissioned when last seen (else: lost)


Action = StartHost | DrainHost | Forget | HostDied


class ExecutorWatch:
    """Fed executor snapshots (`observe`) and the host records the start-up jobs return
    (`hosts_found`); not thread-safe (one driver thread owns it)."""

    def __init__(self, retry_s: float = 5.0, dead_after_s: float = 10.0, max_backoff_s: float = 60.0,
                 stable_after_s: float = 60.0) -> None:
        self.retry_s, self.dead_after_s = retry_s, dead_after_s
        self._max_backoff_s, self._stable_after_s = max_backoff_s, stable_after_s
        self._hosts: dict[str, HostRecord] = {}
        self._absent_since: dict[str, float] = {}  # executor -> since when its host is not a member
        self._member_since: dict[str, float] = {}  # executor -> since when its host is a member
        self._dead: dict[str, HostRecord] = {}  # executor -> its host presumed dead, until replaced
        self._deaths: dict[str, int] = {}  # executor -> its host's deaths in a row
        self._not_before: dict[str, float] = {}  # executor -> no host asked for before (back-off)
        self._asked: dict[str, float] = {}  # executor -> when a host was last asked for
        self._decommissioning: set[str] = set()
        self._drained: set[str] = set()
        self._seen: set[str] = set()
        self._gone: set[str] = set()  # Spark never reuses an executor id

    def hosts(self) -> dict[str, HostRecord]:
        """executor id -> its host's ready record, for the executors present."""
        return dict(self._hosts)

    def hosts_found(self, records: Iterable[HostRecord]) -> list[tuple[str, HostRecord, HostRecord]]:
        """Records from `ensure_host`: a newer record of an executor replaces the older one (a
        host restarted on it); records of executors already gone are ignored. Returns (executor,
        dead host, new host) for each host presumed dead that a new process replaced."""
        replaced = []
        for record in records:
            executor = str(record["executor_id"])
            if executor not in self._gone:
                self._hosts[executor] = record
                self._asked.pop(executor, None)
                dead = self._dead.pop(executor, None)
                if dead is not None and dead.get("pid") != record.get("pid"):
                    replaced.append((executor, dead, record))
        return replaced

    def observe(self, executors: Mapping[str, bool], now: float,
                members: Collection[str] | None = None) -> list[Action]:
        """`executors`: every executor Spark has now, id -> whether it is being decommissioned;
        `members`: the endpoints of the hosts in the group now (None: not known, no host is presumed dead)."""
        actions: list[Action] = []
        for gone in sorted(self._seen - set(executors)):
            actions.append(Forget(gone, self._hosts.pop(gone, None), gone in self._decommissioning))
            for per_executor in (self._absent_since, self._member_since, self._dead, self._deaths, self._not_before):
                per_executor.pop(gone, None)
            self._gone.add(gone)
            self._asked.pop(gone, None)
            self._decommissioning.discard(gone)
            self._drained.discard(gone)
        self._seen = set(executors)
        self._decommissioning = {e for e, leaving in executors.items() if leaving}
        for executor in sorted(self._decommissioning - self._drained):
            host = self._hosts.get(executor)
            if host is not None:
                actions.append(DrainHost(executor, host))
                self._drained.add(executor)
        if members is not None:
            actions += self._presume_dead(executors, now, members)
        missing = [e for e in sorted(executors) if e not in self._hosts and e not in self._decommissioning
                   and now - self._asked.get(e, now - self.retry_s) >= self.retry_s
                   and now >= self._not_before.get(e, now)]
        if missing:
            actions.append(StartHost(tuple(missing)))
            self._asked.update((e, now) for e in missing)
        return actions

    def _presume_dead(self, executors: Mapping[str, bool], now: float, members: Collection[str]) -> list[Action]:
        """Hosts of present executors that are not members of the group for `dead_after_s`."""
        died: list[Action] = []
        for executor, host in sorted(self._hosts.items()):
            if executor not in executors or executors[executor]:
                continue  # gone (Forget) or being decommissioned (it leaves on purpose)
            if host.get("endpoint") in members:
                self._absent_since.pop(executor, None)
                since = self._member_since.setdefault(executor, now)
                if now - since >= self._stable_after_s:
                    self._deaths.pop(executor, None)
                continue
            self._member_since.pop(executor, None)
            if now - self._absent_since.setdefault(executor, now) < self.dead_after_s:
                continue
            deaths = self._deaths[executor] = self._deaths.get(executor, 0) + 1
            backoff = min(self._max_backoff_s, self.retry_s * 2 ** (deaths - 1))
            del self._hosts[executor], self._absent_since[executor]
            self._dead[executor] = host
            self._not_before[executor] = now + backoff
            died.append(HostDied(executor, host, backoff))
        return died
