"""The checked upgrade's pure core against a model of the group (no services): both bounces host
by host, waiting between them, and stopping, with nothing more restarted, when a check fails."""

from __future__ import annotations

import dataclasses
import itertools

from streams_rt.runtime.upgrade_plan import Finished, GroupSeen, HostSeen, Restart, Stopped, UpgradePlan, Wait

NEW = "/opt/new/bin/python"
names = (f"member-{i}" for i in itertools.count())


class Group:
    """Three hosts of an old release (reads version 10, EAGER); a restart gives the host a new
    name and the release and protocol it asked for. Members use the oldest version any reads."""

    def __init__(self, new_release_reads: int = 11) -> None:
        self.hosts = [HostSeen(f"p{i}", next(names), f"e{i}", 10, 10, "EAGER") for i in range(3)]
        self.new_release_reads = new_release_reads
        self.lags: dict[str, int] = {}
        self.stable = True

    def seen(self) -> GroupSeen:
        used = min(h.latest_supported_version or 0 for h in self.hosts)
        hosts = tuple(dataclasses.replace(h, version=used) for h in self.hosts)
        return GroupSeen(self.stable, True, hosts, dict(self.lags))

    def restart(self, action: Restart) -> None:
        i = next(i for i, h in enumerate(self.hosts) if h.process_id == action.host.process_id)
        latest = self.new_release_reads if action.python == NEW else self.hosts[i].latest_supported_version
        protocol = "EAGER" if action.properties.get("upgrade.from") else "COOPERATIVE"
        self.hosts[i] = dataclasses.replace(self.hosts[i], name=next(names), latest_supported_version=latest,
                                            rebalance_protocol=protocol)


def drive(plan: UpgradePlan, group: Group, steps: int = 100) -> tuple[list[Restart | Wait], Finished | Stopped]:
    seen: list[Restart | Wait] = []
    for now in range(steps):
        action = plan.next(group.seen(), float(now))
        if isinstance(action, (Finished, Stopped)):
            return seen, action
        seen.append(action)
        if isinstance(action, Restart):
            group.restart(action)
    raise AssertionError(f"no end after {steps} steps: {seen[-3:]}")


def test_both_bounces_host_by_host_then_finished() -> None:
    group = Group()
    actions, end = drive(UpgradePlan(NEW, "2.3", 10_000, 30.0, latest_version=11), group)
    restarts = [a for a in actions if isinstance(a, Restart)]
    assert [(r.host.process_id, dict(r.properties), r.python) for r in restarts] == [
        *((f"p{i}", {"upgrade.from": "2.3"}, NEW) for i in range(3)),
        *((f"p{i}", {"upgrade.from": None}, None) for i in range(3)),
    ]
    assert isinstance(end, Finished) and "3 hosts at metadata version 11, COOPERATIVE" in end.summary
    assert {(h.version, h.rebalance_protocol) for h in group.seen().hosts} == {(11, "COOPERATIVE")}


def test_it_waits_for_the_restarted_host_and_a_stable_group_before_the_next_restart() -> None:
    group = Group()
    plan = UpgradePlan(NEW, "2.3", 10_000, 30.0)
    first = plan.next(group.seen(), 0.0)
    assert isinstance(first, Restart)
    waiting = plan.next(group.seen(), 1.0)  # not restarted yet: the same name is still in the group
    assert isinstance(waiting, Wait) and "has not rejoined" in waiting.reason
    group.restart(first)
    group.stable = False
    assert isinstance(plan.next(group.seen(), 2.0), Wait)
    group.stable = True
    group.lags = {"0_1": 50_000}
    lagging = plan.next(group.seen(), 3.0)
    assert isinstance(lagging, Wait) and "0_1 is 50000 records behind" in lagging.reason
    group.lags = {"0_1": 10}
    assert isinstance(plan.next(group.seen(), 4.0), Restart)


def test_a_check_that_keeps_failing_stops_it_and_nothing_more_restarts() -> None:
    group = Group()
    plan = UpgradePlan(NEW, "2.3", 10_000, 30.0)
    first = plan.next(group.seen(), 0.0)
    assert isinstance(first, Restart)
    group.restart(first)
    group.lags = {"1_0": 20_000}
    actions = [plan.next(group.seen(), float(t)) for t in range(1, 40)]
    stopped = actions[-1]
    assert isinstance(stopped, Stopped) and stopped.check == "lag within acceptable.recovery.lag"
    assert "1 of 3 hosts restarted in the first bounce" in stopped.line()
    assert "\n" not in stopped.line()
    assert not [a for a in actions if isinstance(a, Restart)]
    group.lags = {}
    assert plan.next(group.seen(), 50.0) is stopped  # stopped stays stopped


def test_a_new_release_that_does_not_read_the_expected_version_stops_it() -> None:
    group = Group(new_release_reads=10)  # --to named the old environment by mistake
    actions, end = drive(UpgradePlan(NEW, "2.3", 10_000, 5.0, latest_version=11), group)
    assert isinstance(end, Stopped) and end.check == "member version"
    assert "reads metadata version 10, not the new release's 11" in end.detail
    assert len([a for a in actions if isinstance(a, Restart)]) == 1


def test_a_rerun_goes_on_where_a_stopped_run_left_the_group() -> None:
    """With --latest-version a rerun skips the hosts already where the bounce would put them: after
    one host of the first bounce it restarts the other two, then all three without upgrade.from;
    after one host of the second bounce, only the other two."""
    group = Group()
    first = UpgradePlan(NEW, "2.3", 10_000, 30.0, latest_version=11)
    restart = first.next(group.seen(), 0.0)
    assert isinstance(restart, Restart)
    group.restart(restart)
    actions, end = drive(UpgradePlan(NEW, "2.3", 10_000, 30.0, latest_version=11), group)
    assert [(r.host.process_id, r.step) for r in actions if isinstance(r, Restart)] == [
        ("p1", "first bounce"), ("p2", "first bounce"),
        ("p0", "second bounce"), ("p1", "second bounce"), ("p2", "second bounce")]
    assert isinstance(end, Finished)

    group = Group()  # stopped after the first host of the second bounce
    group.hosts = [dataclasses.replace(h, latest_supported_version=11, rebalance_protocol=protocol)
                   for h, protocol in zip(group.hosts, ["COOPERATIVE", "EAGER", "EAGER"], strict=True)]
    actions, end = drive(UpgradePlan(NEW, "2.3", 10_000, 30.0, latest_version=11), group)
    assert [(r.host.process_id, r.step) for r in actions if isinstance(r, Restart)] == [
        ("p1", "second bounce"), ("p2", "second bounce")]
    assert isinstance(end, Finished)


def test_without_latest_version_a_rerun_starts_over() -> None:
    """An old host and a new one look alike without --latest-version: every host is restarted."""
    group = Group()
    first = UpgradePlan(NEW, "2.3", 10_000, 30.0)
    restart = first.next(group.seen(), 0.0)
    assert isinstance(restart, Restart)
    group.restart(restart)
    actions, _ = drive(UpgradePlan(NEW, "2.3", 10_000, 30.0), group)
    assert len([a for a in actions if isinstance(a, Restart)]) == 6
