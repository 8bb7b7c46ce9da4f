"""A randomized soak, after Kafka's streams_eos_test and Jepsen's nemesis: for a few minutes (the
short form, in `make test-faults`) or an hour (`make test-soak`, marker `soak`) a seeded schedule
of faults (nemesis.py) hits the smoke application under exactly_once_v2 while input flows
throughout: kill -9 of a task host (the driver's host supervisor restarts it, in its state
directory), SIGSTOP of a host past its session timeout and then SIGCONT, a broker bounce (its own
broker; clean or kill -9), a member joining and, at the next such fault, leaving. At the end: the
verifier (lost=0, duplicated=0), the ownership audit, and every host's resident memory, sampled
throughout: its growth over the last half of the run under 10%. Kills spare one host, the witness
(host-0; it may still be paused), so that at least one process lives through the last half of even
the hour-long run and has that figure. The seed is printed;
STREAMS_RT_SOAK_SEED=<seed> replays a run's faults."""

from __future__ import annotations

import functools
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from streams_rt.kafka.dev_broker import DevBroker
from tests.faults.driver import smoke_workload
from tests.faults.harness import FaultRun, SummaryRow, bounce_broker
from tests.faults.nemesis import Fault, schedule

pytestmark = pytest.mark.broker
GUARANTEE = "exactly_once_v2"
SESSION_S = 6.0  # the harness's session.timeout.ms
OUTAGE_S = 6.0
RSS_EVERY_S = 2.0
MAX_RSS_GROWTH = 0.10
WITNESS = "host-0"  # never killed: its memory is measured over the last half of every run


def rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@dataclass
class RssSampler:
    """Every host process's resident memory every RSS_EVERY_S, on a thread of its own."""

    run: FaultRun
    samples: list[tuple[float, str, int, int]] = field(default_factory=list)  # (t, host, pid, bytes)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._sample, name="soak-rss", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(RSS_EVERY_S):
            for name, host in list(self.run.app.hosts.items()):
                if host.alive and (rss := rss_bytes(host.proc.pid)) is not None:
                    self.samples.append((time.monotonic(), name, host.proc.pid, rss))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def growth_last_half(self, started: float, ended: float) -> dict[str, float]:
        """Per host process that lived through the whole last half: its RSS at the end of the run
        over its RSS at the middle, minus one (a process restarted meanwhile has no such figure)."""
        middle = started + (ended - started) / 2
        by_process: dict[tuple[str, int], list[tuple[float, int]]] = {}
        for t, name, pid, rss in self.samples:
            by_process.setdefault((name, pid), []).append((t, rss))
        growth = {}
        for (name, pid), points in by_process.items():
            first, last = points[0], points[-1]
            if first[0] <= middle + RSS_EVERY_S * 2 and last[0] >= ended - RSS_EVERY_S * 3:
                at_middle = min(points, key=lambda p: abs(p[0] - middle))[1]
                tail = [rss for t, rss in points if t >= ended - RSS_EVERY_S * 5]
                growth[f"{name} (pid {pid})"] = sum(tail) / len(tail) / at_middle - 1
        return growth


class Nemesis:
    """Carries out one fault on a run, and waits until the group has settled after it."""

    def __init__(self, run: FaultRun, broker: DevBroker) -> None:
        self.run, self.broker = run, broker
        self.joined: str | None = None
        self.hosts = 3

    def victim(self, fault: Fault) -> str:
        spared = {self.joined} | ({WITNESS} if fault.kind == "kill" else set())
        names = sorted(n for n, h in self.run.app.hosts.items() if h.alive and n not in spared)
        return names[fault.host % len(names)]

    def carry_out(self, fault: Fault) -> str:
        what = {"kill": self.kill, "pause": self.pause, "broker": self.bounce, "member": self.member}[fault.kind]
        done = what(fault)
        self.run.settle(hosts=self.hosts, timeout_s=180)
        return done

    def kill(self, fault: Fault) -> str:
        name = self.victim(fault)
        host = self.run.app.hosts[name]
        pid = host.proc.pid
        self.run.fault(self.run.tasks_of(name))
        os.kill(pid, signal.SIGKILL)
        self.run.after_unclean_stop(name)
        self.run.run_until(lambda: (h := self.run.app.hosts[name]).alive and h.proc.pid != pid
                           and h.endpoint is not None, 60, f"{name} restarted by the supervisor")
        return f"kill -9 {name}"

    def pause(self, fault: Fault) -> str:
        name = self.victim(fault)
        host = self.run.app.hosts[name]
        endpoint = host.endpoint
        self.run.fault(self.run.tasks_of(name))
        os.kill(host.proc.pid, signal.SIGSTOP)
        try:
            # No batches meanwhile: a call to a stopped host would wait for its RPC timeout.
            deadline = time.monotonic() + 60
            while any(s.endpoint == endpoint for s in self.run.loop.status()[1].values()):
                assert time.monotonic() < deadline, f"{name}'s tasks did not move within 60 s of SIGSTOP"
                time.sleep(0.2)
            self.run.run_for(2)
        finally:
            os.kill(host.proc.pid, signal.SIGCONT)
        self.run.after_unclean_stop(name)  # fenced: it closes its tasks dirty
        return f"SIGSTOP {name} past the session timeout, then SIGCONT"

    def bounce(self, fault: Fault) -> str:
        bounce_broker(self.run, self.broker, fault.hard, OUTAGE_S)
        for name in self.run.app.hosts:
            self.run.checkpoints.excuse(name)  # transactions the outage crossed are rolled back
        return f"broker bounced ({'kill -9' if fault.hard else 'clean'})"

    def member(self, fault: Fault) -> str:
        if self.joined is None:
            self.joined = "host-joined"
            self.run.app.start_host(self.joined)
            self.hosts = 4
            return "a member joined"
        self.run.app.stop_host(self.joined)
        self.joined, self.hosts = None, 3
        return "a member left"


def reached(started: float, at_s: float) -> bool:
    return time.monotonic() - started >= at_s


def soak(broker: DevBroker, tmp_path: Path, summary: list[SummaryRow], duration_s: float) -> None:
    seed = int(os.environ.get("STREAMS_RT_SOAK_SEED", random.randrange(2**31)))
    faults = schedule(seed, duration_s)
    print(f"\nsoak: seed {seed} (STREAMS_RT_SOAK_SEED={seed} replays it), {duration_s:.0f} s, {len(faults)} faults: "
          + ", ".join(f"{f.at_s:.0f}s {f.kind}" for f in faults))
    info = broker.status()
    assert info is not None
    records = max(5_000, int(duration_s * 40))
    keys = 20
    run = FaultRun(info.bootstrap_servers, tmp_path / "run", GUARANTEE, duration_s=duration_s,
                   records=smoke_workload(keys, records // keys, seed), supervise=True)
    sampler = RssSampler(run)
    done: list[str] = []
    try:
        run.settle(hosts=3)
        started = time.monotonic()
        nemesis = Nemesis(run, broker)
        for fault in faults:
            run.run_until(functools.partial(reached, started, fault.at_s), duration_s + 600,
                          f"the moment of the fault at {fault.at_s} s")
            done.append(f"{time.monotonic() - started:.0f}s {nemesis.carry_out(fault)}")
        if nemesis.joined is not None:
            done.append(f"{time.monotonic() - started:.0f}s {nemesis.member(faults[-1])}")
            run.settle(hosts=3)
        run.run_until(functools.partial(reached, started, duration_s), duration_s + 600, "the run's end")
        ended = time.monotonic()
        sampler.stop()
        growth = sampler.growth_last_half(started, ended)
        verdict = run.finish(f"soak {duration_s / 60:.0f} min, seed {seed}, {len(done)} faults", summary)
    finally:
        sampler.stop()
        run.close()
    worst = max(growth.items(), key=lambda kv: kv[1]) if growth else ("none", 0.0)
    print(f"soak: seed {seed}: " + "; ".join(done))
    print(f"soak: seed {seed}: {verdict.summary()}; RSS growth over the last half: worst {worst[1]:+.1%} "
          f"({worst[0]}), every host: " + ", ".join(f"{h} {g:+.1%}" for h, g in sorted(growth.items())))
    assert verdict.passed, verdict.problems
    assert verdict.lost == 0 and verdict.duplicated == 0
    assert any(h.startswith(f"{WITNESS} ") for h in growth), f"no RSS figure for the witness {WITNESS}"
    assert worst[1] < MAX_RSS_GROWTH, f"RSS grew {worst[1]:.1%} over the last half ({worst[0]}); seed {seed}"


@pytest.mark.faults
def test_a_randomized_soak_short(own_broker: DevBroker, tmp_path: Path, summary: list[SummaryRow]) -> None:
    soak(own_broker, tmp_path, summary, duration_s=240.0)


@pytest.mark.soak
def test_a_randomized_soak_of_an_hour(own_broker: DevBroker, tmp_path: Path, summary: list[SummaryRow]) -> None:
    soak(own_broker, tmp_path, summary, duration_s=3_600.0)
