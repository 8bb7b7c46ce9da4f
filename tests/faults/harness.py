"""One fault run: the smoke application on its own topics with 3 task hosts (OS processes) and
`num.standby.replicas=1`, the driver producing while batches run, the invariants watched, and at
the end the verifier's verdict and a summary row for the suite's report."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from streams_rt.kafka.dev_broker import DevBroker
from streams_rt.protocol import TaskId
from streams_rt.rpc.batches import BatchError, HostClient
from streams_rt.runtime.batch_loop import BatchLoop
from streams_rt.runtime.local import LocalApplication
from tests.faults import invariants
from tests.faults.driver import Driver, Produced, smoke_workload
from tests.faults.smoke_topology import INPUT, OUTPUTS
from tests.faults.verifier import Verdict, changelog_state, open_transactions, read_outputs, verify

PARTITIONS = 4
# Kafka's default. Smaller, a host restarted with little state would get warm-ups instead of
# tasks until a probing rebalance (60 s at the least), and the counts would settle only then.
ACCEPTABLE_RECOVERY_LAG = 10_000
# No record cache: every update is emitted, so the verifier can compare each key's whole sequence of
# updates with the reference (with a cache, updates between flushes collapse into one).
FAST = {"group.initial.rebalance.delay.ms": 0,
        "statestore.cache.max.bytes": 0, "heartbeat.interval.ms": 300, "session.timeout.ms": 6000,
        "commit.interval.ms": 500, "max.poll.interval.ms": 30000, "num.standby.replicas": 1,
        "acceptable.recovery.lag": ACCEPTABLE_RECOVERY_LAG}


def wait_for_leaders(admin: AdminClient, topics: Collection[str], timeout_s: float = 30.0,
                     partitions: int = PARTITIONS) -> None:
    """Until the metadata shows every partition of `topics` with a leader (a topic just created may
    be missing from it for a moment)."""
    deadline = time.monotonic() + timeout_s
    while True:
        metadata = admin.list_topics(timeout=10).topics
        if all(t in metadata and len(metadata[t].partitions) == partitions
               and all(p.leader >= 0 for p in metadata[t].partitions.values()) for t in topics):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {sorted(topics)} have no leaders after {timeout_s} s")
        time.sleep(0.1)


def create_smoke_topics(bootstrap: str, replication: int = 1) -> str:
    """The smoke application's input and output topics under a fresh suffix, with `replication`
    replicas each; the suffix."""
    suffix = f"-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"{INPUT}{suffix}", *(f"{name}{suffix}" for name in OUTPUTS)]
    for future in admin.create_topics([NewTopic(t, PARTITIONS, replication) for t in topics]).values():
        future.result()
    wait_for_leaders(admin, topics)
    return suffix


def final_verdict(bootstrap: str, guarantee: str, suffix: str, application_id: str, produced: list[Produced],
                  problems: Collection[str]) -> Verdict:
    """The verifier's verdict on a stopped application, `problems` (the invariants') first; under
    exactly-once a transaction left open is one more."""
    found = list(problems)
    if guarantee == "exactly_once_v2":
        left_open = open_transactions(bootstrap, [f"{name}{suffix}" for name in OUTPUTS])
        found += [f"{tp}: a transaction left open ({n} offsets)" for tp, n in left_open.items()]
    verdict = verify(guarantee, produced, read_outputs(bootstrap, suffix), changelog_state(bootstrap, application_id))
    verdict.problems[:0] = found
    return verdict


def task_counts(group: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """(active, standby) tasks per member of `group` (the coordinator's describe()) at its current
    generation; warm-up replicas (KIP-441) are not counted as standbys."""
    return {member: (len(m.get("active", [])), len(set(m.get("standby", [])) - set(m.get("warmup", []))))
            for member, m in group["members"].items() if m["generation"] == group["generation"]}


def is_settled(group: Mapping[str, Any], counts: Mapping[str, tuple[int, int]], hosts: int) -> bool:
    """The group stable over `hosts` members, every task active once and, with two or more hosts,
    num.standby.replicas (1) standby of each."""
    standbys = PARTITIONS if hosts > 1 else 0
    return (group["state"] == "STABLE" and len(counts) == hosts and sum(a for a, _ in counts.values()) == PARTITIONS
            and sum(s for _, s in counts.values()) == standbys)


def without_warmups(statuses: dict[str, dict[str, Any]], group: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Host statuses with only their standbys (not warm-ups) left in `standby_lag`."""
    for status in statuses.values():
        warmups = set(group["members"].get(status["member_id"], {}).get("warmup", []))
        status["standby_lag"] = {t: lag for t, lag in status["standby_lag"].items() if t not in warmups}
    return statuses


def settle_group(describe: Callable[[], Mapping[str, Any]], wait: Callable[[Callable[[], bool], float, str], None],
                 host_statuses: Callable[[], dict[str, dict[str, Any]]], hosts: int,
                 timeout_s: float) -> dict[str, tuple[int, int]]:
    """Until the group (`describe`: the coordinator's) is stable over `hosts` members with every task
    active once and, with two or more hosts, num.standby.replicas (1) standby of each, every standby
    (warm-ups aside) caught up within acceptable.recovery.lag; the (active, standby) counts per
    member. `wait(done, timeout_s, what)` waits, running whatever has to run meanwhile."""
    standbys = PARTITIONS if hosts > 1 else 0
    counts: dict[str, tuple[int, int]] = {}

    def settled() -> bool:
        nonlocal counts
        group = describe()
        counts = task_counts(group)
        return is_settled(group, counts, hosts)

    try:
        wait(settled, timeout_s, f"{hosts} hosts with {PARTITIONS} active and {standbys} standby tasks")
    except AssertionError as e:
        raise AssertionError(f"{e}; (active, standby) per member: {counts}") from None
    invariants.wait_for_standbys(lambda: without_warmups(host_statuses(), describe()), standbys,
                                 ACCEPTABLE_RECOVERY_LAG)
    return counts


@dataclass
class SummaryRow:
    """One line of the suite's summary."""

    fault: str
    guarantee: str
    verdict: Verdict
    recovery_s: list[float] = field(default_factory=list)

    def line(self) -> str:
        recovery = (f"{max(self.recovery_s):.1f}s (max of {len(self.recovery_s)})" if self.recovery_s else "n/a")
        return f"{self.fault:<44} {self.guarantee:<16} {self.verdict.summary()} recovery={recovery}"


class FaultRun:
    """The application, its batch loop and the invariant watchers. `step()` runs one round of
    batches; `fault()` marks a fault's moment and the tasks it hits, whose first output after it
    gives the recovery time."""

    def __init__(self, bootstrap: str, work_dir: Path, guarantee: str, hosts: int = 3,
                 records: list[tuple[str, int]] | None = None, duration_s: float = 20.0,
                 batch_records: int = 300, supervise: bool = False, **props: Any) -> None:
        """`supervise`: hosts that die are restarted by the driver's supervisor (LocalApplication's)."""
        self.bootstrap, self.guarantee = bootstrap, guarantee
        self.suffix = create_smoke_topics(bootstrap, int(props.get("replication.factor", 1)))
        self.ownership_log = work_dir / "ownership.log"
        properties = {"application.id": f"faults-{uuid.uuid4().hex[:10]}", "bootstrap.servers": bootstrap,
                      "processing.guarantee": guarantee, "task.ownership.log": str(self.ownership_log),
                      **FAST, **props}
        self.application_id = str(properties["application.id"])
        self.work_dir = work_dir / self.application_id
        self.app = LocalApplication("tests.faults.smoke_topology:smoke", properties, self.work_dir, hosts=hosts,
                                    topology_args={"suffix": self.suffix}, supervise=supervise)
        self.loop: BatchLoop = self.app.loop(max_records_per_task=batch_records)
        self.app.wait_until_running(self.loop)
        self.checkpoints = invariants.CheckpointWatch(self.work_dir, self.application_id)
        self.driver = Driver(bootstrap, f"{INPUT}{self.suffix}", records or smoke_workload(20, 250),
                             duration_s).start()
        self.recovery_s: list[float] = []
        self._waiting: dict[TaskId, float] = {}  # task -> when the fault that hit it happened

    # -- running -------------------------------------------------------------------------------
    def step(self) -> int:
        """One round of batches; the records processed."""
        result = self.loop.run_once()
        now = time.monotonic()
        for task, records in result.records.items():
            began = self._waiting.pop(task, None)
            if began is not None and records:
                self.recovery_s.append(now - began)
            elif began is not None:
                self._waiting[task] = began
        self.checkpoints.sample()
        return result.total_records

    def run_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.step():
                time.sleep(0.05)

    def run_until(self, done: Callable[[], bool], timeout_s: float = 120.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"not reached within {timeout_s} s: {what}")
            if not self.step():
                time.sleep(0.05)

    def drain(self, timeout_s: float = 180.0) -> list[Produced]:
        """Until the driver is done and every record is processed; what the driver produced."""
        self.run_until(lambda: self.driver.finished, timeout_s, "the driver to finish")
        # `finished` is set before the driver's producer is closed; give the close its time.
        produced = self.driver.wait(60)
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.step():
                _, statuses = self.loop.status()
                if self.loop.lag(statuses) == 0 and not self.loop.pending:
                    return produced
                time.sleep(0.05)
            if time.monotonic() > deadline:
                raise AssertionError(f"inputs not drained within {timeout_s} s")

    # -- faults --------------------------------------------------------------------------------
    def tasks_of(self, host: str) -> set[TaskId]:
        endpoint = self.app.hosts[host].endpoint
        return {t for t, s in self.loop.status()[1].items() if s.endpoint == endpoint}

    def fault(self, tasks: Iterable[TaskId]) -> None:
        """A fault hits `tasks` now: their next output after it ends their recovery."""
        now = time.monotonic()
        for task in tasks:
            self._waiting.setdefault(task, now)

    def kill(self, host: str) -> None:
        """kill -9 of a host; under exactly-once its checkpoints may go back (an unclean shutdown)."""
        self.fault(self.tasks_of(host))
        self.app.stop_host(host, kill=True)
        self.after_unclean_stop(host)

    def after_unclean_stop(self, host: str) -> None:
        if self.guarantee == "exactly_once_v2":
            self.checkpoints.excuse(host)
        stale = invariants.stale_task_locks(self.work_dir, self.application_id, self.live_pids())
        assert not stale, stale

    def live_pids(self) -> set[int]:
        return {h.proc.pid for h in self.app.hosts.values() if h.alive}

    def host_statuses(self) -> dict[str, dict[str, Any]]:
        statuses = {}
        for name, host in self.app.hosts.items():
            if not host.alive or host.endpoint is None:
                continue
            try:
                with HostClient(host.endpoint, secret=self.app.coordinator.secret, timeout_s=10) as client:
                    statuses[name] = client.status()
            except BatchError:
                continue
        return statuses

    def task_counts(self) -> dict[str, tuple[int, int]]:
        return task_counts(self.app.coordinator.describe())

    def settle(self, hosts: int, timeout_s: float = 120.0) -> dict[str, tuple[int, int]]:
        return settle_group(self.app.coordinator.describe, self.run_until, self.host_statuses, hosts, timeout_s)

    # -- the end -------------------------------------------------------------------------------
    def finish(self, fault: str, summary: list[SummaryRow], extra_problems: Collection[str] = ()) -> Verdict:
        """Drain, check the invariants, stop the hosts, verify the outputs and the final state;
        the row goes to the suite's summary whatever the verdict."""
        produced = self.drain()
        problems = list(extra_problems)
        problems += invariants.ownership_violations(self.ownership_log)
        problems += self.checkpoints.violations
        self.loop.close()
        self.app.close()
        problems += invariants.stale_task_locks(self.work_dir, self.application_id, live_pids=())
        verdict = final_verdict(self.bootstrap, self.guarantee, self.suffix, self.application_id, produced, problems)
        summary.append(SummaryRow(fault, self.guarantee, verdict, self.recovery_s))
        return verdict

    def close(self) -> None:
        """After a failure: stop everything (closing twice is fine)."""
        self.loop.close()
        self.app.close()


def bounce_broker(run: FaultRun, broker: DevBroker, hard: bool, outage_s: float) -> None:
    """Stop the broker (SIGTERM, or SIGKILL when `hard`), keep the batch loop calling through an
    outage of `outage_s`, start the broker again on the same ports; every task's next output ends
    its recovery."""
    info = broker.status()
    assert info is not None
    run.fault(run.loop.status()[1])
    if hard:
        os.kill(info.pid, signal.SIGKILL)
        while _alive(info.pid):
            time.sleep(0.05)
    else:
        assert broker.stop()
    run.run_for(outage_s)
    back = broker.start(owned=True)
    assert back.port == info.port, "the broker came back on other ports"


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for its parent."""
    try:
        os.kill(pid, 0)
        return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (ProcessLookupError, FileNotFoundError):
        return False
