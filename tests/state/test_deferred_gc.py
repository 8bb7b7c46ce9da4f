"""The cyclic collector is held off inside the block only (and while any thread is inside one), left as
found, and collects anyway between chunks once garbage passes the bound."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from streams_rt.state.deferred_gc import collect_if_grown, collector_deferred


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    gc.enable()
    with collector_deferred():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_inside_turns_the_collector_on_again() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_deferred():
        raise RuntimeError("apply failed")
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    with collector_deferred():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_collector_stays_off_until_the_last_thread_leaves() -> None:
    """Two tasks' batches on two threads: the first to finish must not turn it on under the other."""
    gc.enable()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with collector_deferred():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with collector_deferred():
            second_in.set()
            first_out.wait(5)
            seen.append(gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == [False]
    assert gc.isenabled()


def test_garbage_in_cycles_is_collected_past_the_bound() -> None:
    """Cycles made while the collector is held off are collected between chunks once they pass the
    bound, not left to pile up until the block ends."""

    class Node:
        def __init__(self) -> None:
            self.me = self

    gc.enable()
    gc.collect()
    with collector_deferred():
        for _ in range(2_000):
            Node()
        assert gc.get_count()[0] >= 2_000
        assert not collect_if_grown(bound=100_000)
        assert collect_if_grown(bound=1_000)
        assert gc.get_count()[0] < 1_000
