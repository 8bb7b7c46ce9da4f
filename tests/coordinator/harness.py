"""Test harness: a coordinator in the test process (the driver) and task hosts as separate OS
processes (tests/coordinator/member_host.py) speaking real Flight RPC."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pyarrow.flight as flight

from streams_rt.coordinator.group import Member, RoundOutcome, SupersededCheck, never_superseded
from streams_rt.coordinator.service import Coordinator, CoordinatorConfig, RoundPlanner
from streams_rt.coordinator.state_store import StateStore
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from streams_rt.protocol import TaskId
from streams_rt.rpc.settings import ControlPlaneSettings
from streams_rt.rpc.transport import call_options

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
TASKS = frozenset(TaskId(s, p) for s in (0, 1) for p in range(6))
# Kafka's defaults, except the minimum session: hosts here time out in seconds, so tests stay fast
# (Kafka's own tests lower group.min.session.timeout.ms the same way).
TEST_SETTINGS = ControlPlaneSettings(min_session_timeout_ms=100)


class GatedPlanner(StreamsRoundPlanner):
    """The Streams planner, but a round waits at `gate` (open unless a test closes it)."""

    def __init__(self) -> None:
        super().__init__(TASKS)
        self.gate = threading.Event()
        self.gate.set()
        self.computing = threading.Event()
        self.rounds: list[list[str]] = []  # the members of every round that passed the gate
        self.finished: list[list[str]] = []  # ... and of those that ran to their end

    def __call__(self, members: Mapping[str, Member], generation: int, now_ms: int,
                 check: SupersededCheck = never_superseded) -> RoundOutcome:
        self.computing.set()
        try:
            if not self.gate.wait(60):
                raise TimeoutError("the test never opened the gate")
            self.rounds.append(sorted(members))
            outcome = super().__call__(members, generation, now_ms, check)
            self.finished.append(sorted(members))
            return outcome
        finally:
            self.computing.clear()


def authenticated(coordinator: Coordinator) -> flight.FlightCallOptions:
    """Call options of a raw Flight client that carries the coordinator's secret."""
    assert coordinator.secret is not None
    return call_options(None, coordinator.secret.call_headers())


def wait_until(predicate: Callable[[], T | None], timeout_s: float, what: str) -> T:
    """Poll until predicate() is truthy; fail naming what we waited for (no timing assertions)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


class Host:
    def __init__(self, name: str, log_path: Path, proc: subprocess.Popen[bytes], stderr_path: Path) -> None:
        self.name, self.log_path, self.proc, self.stderr_path = name, log_path, proc, stderr_path
        self.killed_at: float | None = None

    def stderr(self) -> str:
        """The host's own log (Python logging goes to stderr)."""
        return self.stderr_path.read_text() if self.stderr_path.exists() else ""

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        out = []
        for line in self.log_path.read_text().splitlines():
            if line.strip():
                e = json.loads(line)
                if kind is None or e["event"] == kind:
                    out.append(e)
        return out

    def last_stable(self) -> dict[str, Any] | None:
        stable = self.events("stable")
        return stable[-1] if stable else None

    def kill9(self) -> None:
        self.killed_at = time.time()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(15)


class HostFactory:
    def __init__(self, coordinator: Coordinator, tmp: Path) -> None:
        """Hosts find the coordinator at its address, which stays valid across a restart on the same
        port, and get its secret in their environment, as the driver hands it to the hosts it starts."""
        self.address = coordinator.address
        self.app = coordinator.config.application_id
        secret = coordinator.secret.environment() if coordinator.secret else {}
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **secret}
        self.tmp = tmp
        self.hosts: list[Host] = []

    def start(self, name: str, *extra: str) -> Host:
        log_path = self.tmp / f"{name}-{len(self.hosts)}.jsonl"
        stderr_path = self.tmp / f"{name}-{len(self.hosts)}.stderr"
        with open(stderr_path, "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.coordinator.member_host", "--coordinator", self.address,
                 "--app", self.app, "--log", str(log_path), *extra],
                cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr, env=self.env,
            )
        host = Host(name, log_path, proc, stderr_path)
        self.hosts.append(host)
        return host

    def cleanup(self) -> None:
        for h in self.hosts:
            if h.proc.poll() is None:
                h.proc.kill()
                h.proc.wait(10)


def converged(coordinator: Coordinator, members: int, tasks: frozenset[TaskId] = TASKS) -> dict[str, Any] | None:
    """The group's description once it is STABLE with `members` members, every member holds the
    current generation, nothing is being revoked and every task has exactly one active owner."""
    d = coordinator.describe()
    if d["state"] != "STABLE" or len(d["members"]) != members:
        return None
    active: list[str] = []
    for m in d["members"].values():
        if m["generation"] != d["generation"] or m.get("revoke"):
            return None
        active += m.get("active", [])
    if sorted(active) != sorted(map(str, tasks)):
        return None
    return d


def owners_from_logs(hosts: list[Host]) -> dict[str, list[str]]:
    """task -> hosts whose callbacks say they hold it right now (assigned minus revoked/lost)."""
    held: dict[str, set[str]] = {}
    for h in hosts:
        mine: set[str] = set()
        for e in h.events():
            if e["event"] == "assigned":
                mine |= set(e["tasks"])
            elif e["event"] in ("revoked", "lost"):
                mine -= set(e["tasks"])
        if h.proc.poll() is None:
            held[h.name] = mine
    out: dict[str, list[str]] = {}
    for name, tasks in held.items():
        for t in tasks:
            out.setdefault(t, []).append(name)
    return out


def hosts_at(hosts: list[Host], generation: int, timeout_s: float = 30) -> dict[str, dict[str, Any]]:
    """Wait until each host's log reports it is stable at `generation`; returns those log entries."""

    def reported() -> dict[str, dict[str, Any]] | None:
        stable = {h.name: s for h in hosts if (s := h.last_stable()) is not None and s["generation"] == generation}
        return stable if len(stable) == len(hosts) else None

    return wait_until(reported, timeout_s, f"hosts {[h.name for h in hosts]} to report generation {generation}")


def settled_now(coordinator: Coordinator, hosts: list[Host], tasks: frozenset[TaskId] = TASKS) -> dict[str, Any] | None:
    """The group's description if it has converged with exactly these hosts (holding `tasks`) and
    each one reports being stable at the group's generation; else None. Members that rejoin, e.g.
    to change version, are not settled yet."""
    d = converged(coordinator, len(hosts), tasks)
    if d is None:
        return None
    got = {h.name: h.last_stable() for h in hosts}
    if all(s is not None and s["generation"] == d["generation"] for s in got.values()):
        return {**d, "hosts": got}
    return None


def settled(coordinator: Coordinator, hosts: list[Host], timeout_s: float = 60) -> dict[str, Any]:
    """Wait until settled_now holds."""
    what = f"group to settle with hosts {[h.name for h in hosts]}"
    return wait_until(lambda: settled_now(coordinator, hosts), timeout_s, what)


def ownership_overlaps(hosts: list[Host]) -> list[str]:
    """Every moment two hosts held one task, from the callback logs (wall-clock timestamps of one
    machine): a task is held from `assigned` until `revoked`/`lost`, the host's kill -9, or now."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for h in hosts:
        since: dict[str, float] = {}
        for e in h.events():
            if e["event"] == "assigned":
                for t in e["tasks"]:
                    since[t] = e["t"]
            elif e["event"] in ("revoked", "lost"):
                for t in e["tasks"]:
                    spans.setdefault(t, []).append((since.pop(t), e["t"], h.name))
        end = h.killed_at if h.killed_at is not None else float("inf")
        for t, start in since.items():
            spans.setdefault(t, []).append((start, end, h.name))
    problems = []
    for t, ss in spans.items():
        ss.sort()
        for (_, e1, h1), (s2, _, h2) in itertools.pairwise(ss):
            if s2 < e1:
                problems.append(f"task {t}: {h1} held it until {e1:.3f} but {h2} from {s2:.3f}")
    return problems


def restart(old: Coordinator, planner: RoundPlanner, store: StateStore) -> Coordinator:
    """Stop the driver's coordinator and start another (maybe another release) on the same port,
    with the same secret: the hosts of this application run keep theirs."""
    port = int(old.address.rsplit(":", 1)[1])
    old.close()
    return Coordinator(CoordinatorConfig(old.config.application_id, port=port, initial_rebalance_delay_ms=0),
                       planner, store=store,
                       settings=TEST_SETTINGS, secret=old.secret)


def assert_single_owners(hosts: list[Host]) -> None:
    doubles = {t: hs for t, hs in owners_from_logs(hosts).items() if len(hs) > 1}
    assert not doubles, f"tasks with two owners: {doubles}"
    assert not ownership_overlaps(hosts)
