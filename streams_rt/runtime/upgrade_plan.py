"""The checked rolling upgrade as a pure state machine: what the group looks like goes in (with
`now`), the next action comes out. `streams_rt.runtime.upgrade` is its driver (it reads the group's
status and each host's process id, performs the restarts, sleeps on `Wait`).

The steps are KIP-429's two bounces, host by host: first every host restarts on the new release
with `upgrade.from` (the group stays EAGER on the common metadata version), then every host
restarts without it. Before each restart the group must be stable with all its hosts, every task
running, no warm-up pending and every reported lag within `acceptable.recovery.lag`; after each
bounce every member's reported version and protocol are verified. When a check does not pass
within the settle timeout the plan stops: it restarts nothing more, and a group stopped between
two restarts is safe (a mixed group mid-upgrade is a state KIP-429 allows)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HostSeen:
    """One task host as the coordinator's status and the host itself report it."""

    process_id: str  # its state directory's id: the same across restarts (the name is not)
    name: str
    endpoint: str
    version: int | None
    latest_supported_version: int | None
    rebalance_protocol: str
    warmups: int = 0


@dataclass(frozen=True)
class GroupSeen:
    stable: bool
    all_running: bool
    hosts: tuple[HostSeen, ...]
    lags: Mapping[str, int] = field(default_factory=dict)  # task -> the largest known lag of its replicas


@dataclass(frozen=True)
class Restart:
    host: HostSeen
    properties: Mapping[str, Any]  # a None value removes the key
    python: str | None
    step: str

    def describe(self) -> str:
        changes = [f"{k}={v}" if v is not None else f"without {k}" for k, v in sorted(self.properties.items())]
        if self.python:
            changes.append(f"from {self.python}")
        return f"{self.step}: restart host {self.host.name} ({', '.join(changes)})"


@dataclass(frozen=True)
class Wait:
    reason: str


@dataclass(frozen=True)
class Finished:
    summary: str


@dataclass(frozen=True)
class Stopped:
    check: str
    detail: str
    done: str

    def line(self) -> str:
        return (f"upgrade stopped: check '{self.check}' failed: {self.detail}. The group is left as it is, which "
                f"is safe ({self.done}); see `streams-rt status` and the host logs, fix the cause, then follow "
                f"docs/operations/rolling-upgrade.md from there or run the upgrade again")


Action = Restart | Wait | Finished | Stopped


class Phase(enum.Enum):
    FIRST_BOUNCE = "first bounce"
    SECOND_BOUNCE = "second bounce"
    FINISHED = "finished"
    STOPPED = "stopped"


class UpgradePlan:
    """`python`: the new release's interpreter; `upgrade_from`: the release left; `latest_version`:
    the metadata version the new release reads (None: whatever every member agrees on)."""

    def __init__(self, python: str | None, upgrade_from: str, acceptable_recovery_lag: int,
                 settle_timeout_s: float, latest_version: int | None = None) -> None:
        self.python, self.upgrade_from = python, upgrade_from
        self.acceptable_recovery_lag, self.settle_timeout_s = acceptable_recovery_lag, settle_timeout_s
        self.latest_version = latest_version
        self.phase = Phase.FIRST_BOUNCE
        self.hosts: int | None = None
        self.bounced: set[str] = set()
        self._waiting_since: float | None = None
        self._restarted: HostSeen | None = None  # the last host restarted, as it was before
        self._result: Finished | Stopped | None = None

    def next(self, seen: GroupSeen, now: float) -> Action:
        if self._result is not None:
            return self._result
        if self.hosts is None:
            self.hosts = len(seen.hosts)
            if self.latest_version is not None and all(
                    h.latest_supported_version == self.latest_version for h in seen.hosts):
                self.phase = Phase.SECOND_BOUNCE  # no host left on the old release: the first bounce is done
        check, detail = self._not_ready(seen)
        if check is None:
            check, detail = self._versions_wrong(seen)
        if check is not None:
            if self._waiting_since is None:
                self._waiting_since = now
            if now - self._waiting_since > self.settle_timeout_s:
                return self._stop(check, f"{detail} for {self.settle_timeout_s:.0f} s")
            return Wait(f"{check}: {detail}")
        self._waiting_since = None
        self.bounced |= {h.process_id for h in seen.hosts if self._already_there(h)}
        pending = [h for h in seen.hosts if h.process_id not in self.bounced]
        if pending:
            host = pending[0]
            self.bounced.add(host.process_id)
            self._restarted = host
            if self.phase is Phase.FIRST_BOUNCE:
                return Restart(host, {"upgrade.from": self.upgrade_from}, self.python, self.phase.value)
            return Restart(host, {"upgrade.from": None}, None, self.phase.value)
        if self.phase is Phase.FIRST_BOUNCE:
            self.phase, self.bounced = Phase.SECOND_BOUNCE, set()
            return Wait("first bounce done and verified: starting the second bounce")
        self.phase = Phase.FINISHED
        version = seen.hosts[0].version
        self._result = Finished(f"upgrade complete: {len(seen.hosts)} hosts at metadata version {version}, "
                                "COOPERATIVE, without upgrade.from")
        return self._result

    def _already_there(self, host: HostSeen) -> bool:
        """A host this bounce would leave as it is, as after an earlier run that stopped half way: on
        the new release (it reads `latest_version`) and asking for the bounce's protocol. Only with
        `latest_version`: without it an old host and a new one cannot be told apart."""
        if self.latest_version is None or host.latest_supported_version != self.latest_version:
            return False
        return host.rebalance_protocol == ("EAGER" if self.phase is Phase.FIRST_BOUNCE else "COOPERATIVE")

    def _not_ready(self, seen: GroupSeen) -> tuple[str | None, str]:
        if self._restarted is not None:
            back = [h for h in seen.hosts if h.process_id == self._restarted.process_id]
            if not back or back[0].name == self._restarted.name:
                return "restarted host back", f"host {self._restarted.name} has not rejoined as a new member yet"
        if not seen.stable:
            return "group stable", "the group is rebalancing"
        if len(seen.hosts) != self.hosts:
            return "every host back", f"{len(seen.hosts)} of {self.hosts} hosts in the group"
        if not seen.all_running:
            return "every task running", "some tasks are not RUNNING"
        warming = [h.name for h in seen.hosts if h.warmups]
        if warming:
            return "no warm-up pending", f"hosts {', '.join(warming)} still warm up replicas"
        behind = {t: lag for t, lag in seen.lags.items() if lag > self.acceptable_recovery_lag}
        if behind:
            task, lag = max(behind.items(), key=lambda item: item[1])
            return ("lag within acceptable.recovery.lag",
                    f"task {task} is {lag} records behind (acceptable.recovery.lag {self.acceptable_recovery_lag})")
        return None, ""

    def _versions_wrong(self, seen: GroupSeen) -> tuple[str | None, str]:
        """Every member's reported version and protocol, as the step just done should leave them."""
        done = [h for h in seen.hosts if h.process_id in self.bounced]
        expected = "EAGER" if self.phase is Phase.FIRST_BOUNCE else "COOPERATIVE"
        for host in done:
            if host.rebalance_protocol != expected:
                return "member protocol", f"host {host.name} asks for {host.rebalance_protocol}, not {expected}"
            if self.latest_version is not None and host.latest_supported_version != self.latest_version:
                return ("member version", f"host {host.name} reads metadata version {host.latest_supported_version}, "
                        f"not the new release's {self.latest_version}: is {self.python} the new release?")
        if len(done) == len(seen.hosts) and done:
            latest = {h.latest_supported_version for h in seen.hosts}
            used = {h.version for h in seen.hosts}
            if len(latest) != 1 or used != latest:
                return "group converged", (f"members use versions {sorted(map(str, used))} and read "
                                           f"{sorted(map(str, latest))} after every host was bounced")
        return None, ""

    def _stop(self, check: str, detail: str) -> Stopped:
        bounced = f"{len(self.bounced)} of {self.hosts} hosts restarted in the {self.phase.value}"
        self.phase = Phase.STOPPED
        self._result = Stopped(check, detail, bounced)
        return self._result
