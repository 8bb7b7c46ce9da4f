"""The cyclic collector is held off inside the block only, and left as found."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from streams_rt.state.deferred_gc import collector_deferred


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
