"""The executor watcher's pure core (no Spark): a host asked for every executor without one (again
after the retry interval, never for one being decommissioned), one drain per decommissioned
executor with a host, one Forget per executor that leaves; and, over any sequence of snapshots, the
hosts it knows are never those of executors gone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.spark.executor_watch import Action, DrainHost, ExecutorWatch, Forget, HostDied, StartHost


def record(executor: str, pid: int = 100) -> dict[str, object]:
    return {"executor_id": executor, "pid": pid, "endpoint": f"grpc://127.0.0.1:{pid}"}


def test_the_executors_without_a_host_get_one_asked_for_once_per_retry_interval() -> None:
    watch = ExecutorWatch(retry_s=5.0)
    assert watch.observe({"0": False, "1": False}, now=0.0) == [StartHost(("0", "1"))]
    assert watch.observe({"0": False, "1": False}, now=1.0) == []  # the job is under way
    watch.hosts_found([record("0")])
    assert watch.observe({"0": False, "1": False}, now=5.0) == [StartHost(("1",))]  # still missing: again
    watch.hosts_found([record("1", 101)])
    assert watch.observe({"0": False, "1": False, "2": False}, now=6.0) == [StartHost(("2",))]
    assert set(watch.hosts()) == {"0", "1"}


def test_a_replacement_executor_gets_a_host_and_the_lost_one_is_forgotten_once() -> None:
    watch = ExecutorWatch()
    watch.hosts_found([record("0"), record("1", 101), record("2", 102)])
    assert watch.observe({"0": False, "1": False, "2": False}, now=0.0) == []
    actions = watch.observe({"0": False, "2": False, "3": False}, now=1.0)  # 1 killed, 3 in its place
    assert actions == [Forget("1", record("1", 101), decommissioned=False), StartHost(("3",))]
    watch.hosts_found([record("3", 103), record("1", 101)])  # a late record of the lost one is ignored
    assert watch.observe({"0": False, "2": False, "3": False}, now=2.0) == []
    assert set(watch.hosts()) == {"0", "2", "3"}


def test_a_decommissioned_executor_has_its_host_drained_once_and_none_started() -> None:
    watch = ExecutorWatch()
    watch.hosts_found([record("0"), record("1", 101)])
    watch.observe({"0": False, "1": False}, now=0.0)
    assert watch.observe({"0": False, "1": True}, now=1.0) == [DrainHost("1", record("1", 101))]
    assert watch.observe({"0": False, "1": True}, now=2.0) == []  # asked once
    assert watch.observe({"0": False, "1": True, "2": True}, now=3.0) == []  # no host for one leaving
    assert watch.observe({"0": False}, now=4.0) == [Forget("1", record("1", 101), decommissioned=True),
                                                    Forget("2", None, decommissioned=True)]


def test_a_host_out_of_the_group_on_a_live_executor_is_presumed_dead_and_replaced_with_back_off() -> None:
    watch = ExecutorWatch(retry_s=5.0, dead_after_s=10.0, max_backoff_s=15.0, stable_after_s=60.0)
    old = record("0", 100)
    watch.hosts_found([old])
    live = {"0": False}
    assert watch.observe(live, now=0.0, members={str(old["endpoint"])}) == []
    assert watch.observe(live, now=1.0, members=set()) == []  # absent: not yet presumed dead
    assert watch.observe(live, now=10.0, members=set()) == []
    assert watch.observe(live, now=11.0, members=set()) == [HostDied("0", old, 5.0)]
    assert watch.hosts() == {} and watch.observe(live, now=15.9, members=set()) == []  # backing off
    assert watch.observe(live, now=16.0, members=set()) == [StartHost(("0",))]
    new = record("0", 200)
    assert watch.hosts_found([new]) == [("0", old, new)]  # a new process: a restart to count
    # It dies again at once: twice the back-off, then capped.
    assert watch.observe(live, now=27.0, members=set()) == []
    assert watch.observe(live, now=38.0, members=set()) == [HostDied("0", new, 10.0)]
    assert watch.observe(live, now=48.0, members=set()) == [StartHost(("0",))]
    assert watch.hosts_found([new]) == []  # the start-up job found it alive after all: nothing restarted
    watch.observe(live, now=49.0, members=set())
    assert watch.observe(live, now=60.0, members=set()) == [HostDied("0", new, 15.0)]


def test_a_host_that_stayed_a_member_starts_its_back_off_over_and_none_is_presumed_dead_unknowing() -> None:
    watch = ExecutorWatch(retry_s=5.0, dead_after_s=10.0, stable_after_s=60.0)
    first = record("0", 100)
    watch.hosts_found([first])
    watch.observe({"0": False}, now=0.0, members=set())
    assert watch.observe({"0": False}, now=10.0, members=set()) == [HostDied("0", first, 5.0)]
    watch.observe({"0": False}, now=15.0, members=set())
    second = record("0", 200)
    watch.hosts_found([second])
    watch.observe({"0": False}, now=16.0, members={str(second["endpoint"])})
    watch.observe({"0": False}, now=80.0, members={str(second["endpoint"])})  # a member for over a minute
    watch.observe({"0": False}, now=81.0, members=set())
    assert watch.observe({"0": False}, now=91.0, members=set()) == [HostDied("0", second, 5.0)]
    assert watch.observe({"0": False}, now=200.0) == [StartHost(("0",))]  # members unknown: nothing presumed
    # Nor is the host of an executor being decommissioned (it leaves the group on purpose).
    watch.hosts_found([record("0", 300)])
    watch.observe({"0": True}, now=201.0, members=set())
    assert [a for a in watch.observe({"0": True}, now=300.0, members=set()) if isinstance(a, HostDied)] == []


snapshots = st.lists(st.dictionaries(st.sampled_from("0123456"), st.booleans(), max_size=7), min_size=1, max_size=20)


@settings(deadline=None)  # timings are the loaded machine's, not the code's
@given(snapshots, st.data())
def test_over_any_history_each_executor_is_drained_and_forgotten_at_most_once(history: list[dict[str, bool]],
                                                                              data: st.DataObject) -> None:
    watch = ExecutorWatch(retry_s=2.0)
    actions: list[Action] = []
    gone: set[str] = set()
    found_ever: set[str] = set()
    for now, executors in enumerate(history):
        executors = {e: leaving for e, leaving in executors.items() if e not in gone}  # ids are never reused
        found = data.draw(st.lists(st.sampled_from("0123456"), max_size=3))
        watch.hosts_found([record(e, 100 + int(e)) for e in found])
        found_ever |= set(found)
        step = watch.observe(executors, float(now))
        actions += step
        gone |= {a.executor_id for a in step if isinstance(a, Forget)}
        assert set(watch.hosts()) <= found_ever - gone  # a record may come before its executor's first snapshot
        for start in (a for a in step if isinstance(a, StartHost)):
            assert all(e in executors and not executors[e] and e not in watch.hosts() for e in start.executor_ids)
    drains = [a.executor_id for a in actions if isinstance(a, DrainHost)]
    forgets = [a.executor_id for a in actions if isinstance(a, Forget)]
    assert len(drains) == len(set(drains)) and len(forgets) == len(set(forgets))
