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
- `Forget`: an executor that left the set, with its host if it had one (one log line)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
class Forget:
    executor_id: str
    host: HostRecord | None
    decommissioned: bool  # it was being decommissioned when last seen (else: lost)


Action = StartHost | DrainHost | Forget


class ExecutorWatch:
    """Fed executor snapshots (`observe`) and the host records the start-up jobs return
    (`hosts_found`); not thread-safe (one driver thread owns it)."""

    def __init__(self, retry_s: float = 5.0) -> None:
        self.retry_s = retry_s
        self._hosts: dict[str, HostRecord] = {}
        self._asked: dict[str, float] = {}  # executor -> when a host was last asked for
        self._decommissioning: set[str] = set()
        self._drained: set[str] = set()
        self._seen: set[str] = set()
        self._gone: set[str] = set()  # Spark never reuses an executor id

    def hosts(self) -> dict[str, HostRecord]:
        """executor id -> its host's ready record, for the executors present."""
        return dict(self._hosts)

    def hosts_found(self, records: Iterable[HostRecord]) -> None:
        """Records from `ensure_host`: a newer record of an executor replaces the older one (a
        host restarted on it); records of executors already gone are ignored."""
        for record in records:
            executor = str(record["executor_id"])
            if executor not in self._gone:
                self._hosts[executor] = record
                self._asked.pop(executor, None)

    def observe(self, executors: Mapping[str, bool], now: float) -> list[Action]:
        """`executors`: every executor Spark has now, id -> whether it is being decommissioned."""
        actions: list[Action] = []
        for gone in sorted(self._seen - set(executors)):
            actions.append(Forget(gone, self._hosts.pop(gone, None), gone in self._decommissioning))
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
        missing = [e for e in sorted(executors) if e not in self._hosts and e not in self._decommissioning
                   and now - self._asked.get(e, now - self.retry_s) >= self.retry_s]
        if missing:
            actions.append(StartHost(tuple(missing)))
            self._asked.update((e, now) for e in missing)
        return actions
