"""When to restart a task host that died: the pure core of the driver's host supervision.

A host that exits without being asked to (kill -9, a crash, the OOM killer) is restarted where it
ran, with its state directory, as Kafka Streams replaces a dead stream thread (KIP-663) and Spark
restarts a lost executor. Restarts back off exponentially, from `backoff_ms` up to
`max_backoff_ms`, so a host that dies at every start (a bad topology, a full disk) does not spin;
one that then ran for `stable_after_ms` starts over at the first back-off. Events in (`started`,
`exited`, `start_failed`, `stopped`), actions out (`due`); `now_ms` is passed in."""

from __future__ import annotations

import enum
from dataclasses import dataclass

RESTART_BACKOFF_MS = 1_000
RESTART_BACKOFF_MAX_MS = 60_000
STABLE_AFTER_MS = 60_000


class Phase(enum.Enum):
    RUNNING = "RUNNING"  # started; watched
    WAITING = "WAITING"  # dead; restarts once its back-off has passed
    STARTING = "STARTING"  # handed out by `due`: the driver is starting it


_TRANSITIONS: dict[str, tuple[frozenset[Phase | None], Phase]] = {
    # event: (the phases it may come in, the phase it leads to); None: a host not supervised yet
    # a start while RUNNING: a process replaced by hand, or a restart the starter reported itself
    "started": (frozenset({None, Phase.RUNNING, Phase.STARTING, Phase.WAITING}), Phase.RUNNING),
    "exited": (frozenset({Phase.RUNNING}), Phase.WAITING),
    "due": (frozenset({Phase.WAITING}), Phase.STARTING),
    "start_failed": (frozenset({Phase.STARTING}), Phase.WAITING),
}


@dataclass(frozen=True)
class Death:
    """What `exited` decided, for the log line: the restart comes after `restart_in_ms`, and is this
    host's `attempt`-th in a row (1 after a stable run)."""

    name: str
    restart_in_ms: int
    attempt: int


@dataclass
class _Host:
    phase: Phase
    since_ms: int  # when it started (RUNNING) or when it may be restarted (WAITING)
    failures: int = 0  # deaths in a row without a stable run between them


class Supervision:
    def __init__(self, backoff_ms: int = RESTART_BACKOFF_MS, max_backoff_ms: int = RESTART_BACKOFF_MAX_MS,
                 stable_after_ms: int = STABLE_AFTER_MS) -> None:
        if not 0 < backoff_ms <= max_backoff_ms:
            raise ValueError(f"back-off {backoff_ms} ms must be positive and at most {max_backoff_ms} ms")
        self._backoff_ms, self._max_ms, self._stable_ms = backoff_ms, max_backoff_ms, stable_after_ms
        self._hosts: dict[str, _Host] = {}

    def phase(self, name: str) -> Phase | None:
        """None: not supervised (never started, or stopped on purpose)."""
        host = self._hosts.get(name)
        return host.phase if host is not None else None

    def started(self, name: str, now_ms: int) -> None:
        """The host runs (first start, or a restart that succeeded; a manual start counts too)."""
        host, phase = self._move(name, "started")
        self._hosts[name] = _Host(phase, now_ms, host.failures if host is not None else 0)

    def stopped(self, name: str) -> None:
        """Stopped on purpose (stop_host, shutdown): no longer supervised, whatever its phase."""
        self._hosts.pop(name, None)

    def exited(self, name: str, now_ms: int) -> Death:
        """It died unasked: when it restarts."""
        host, phase = self._move(name, "exited")
        assert host is not None
        failures = 1 if now_ms - host.since_ms >= self._stable_ms else host.failures + 1
        delay = self._delay(failures)
        self._hosts[name] = _Host(phase, now_ms + delay, failures)
        return Death(name, delay, failures)

    def start_failed(self, name: str, now_ms: int) -> int:
        """The restart did not come up: the next try's delay (ms)."""
        host, phase = self._move(name, "start_failed")
        assert host is not None
        failures = host.failures + 1
        delay = self._delay(failures)
        self._hosts[name] = _Host(phase, now_ms + delay, failures)
        return delay

    def due(self, now_ms: int) -> list[str]:
        """The hosts to restart now (each handed out once: the driver reports `started` or
        `start_failed`)."""
        names = sorted(n for n, h in self._hosts.items() if h.phase is Phase.WAITING and now_ms >= h.since_ms)
        for name in names:
            self._hosts[name].phase = self._move(name, "due")[1]
        return names

    def _delay(self, failures: int) -> int:
        return min(self._max_ms, self._backoff_ms << min(failures - 1, 30))

    def _move(self, name: str, event: str) -> tuple[_Host | None, Phase]:
        """The host's record and the phase `event` leads to, once checked against the transition table."""
        host = self._hosts.get(name)
        allowed, to = _TRANSITIONS[event]
        if (host.phase if host is not None else None) not in allowed:
            raise AssertionError(f"host {name}: {event} while {host.phase.value if host else 'not supervised'}")
        return host, to
