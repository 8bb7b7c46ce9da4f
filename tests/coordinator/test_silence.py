"""SilenceWatch, pure: a member with no join, sync or heartbeat in flight for its threshold is named
once per quiet spell; a call in flight (counted), or one ended lately, keeps it unnamed; members gone
from the group are forgotten; members never seen are not watched."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streams_rt.coordinator.silence import SilenceWatch


def test_a_member_quiet_for_the_threshold_is_named_once() -> None:
    watch = SilenceWatch(after_ms=2_000)
    watch.call_started("a")
    watch.call_ended("a", now_ms=1_000)
    assert watch.silent({"a"}, now_ms=2_999) == []
    assert watch.silent({"a"}, now_ms=3_000) == ["a"]
    assert watch.silent({"a"}, now_ms=9_000) == []  # once per quiet spell
    watch.call_started("a")
    watch.call_ended("a", now_ms=9_500)
    assert watch.silent({"a"}, now_ms=11_500) == ["a"]  # a new spell after a call


def test_a_member_holding_a_call_is_never_silent() -> None:
    watch = SilenceWatch(after_ms=2_000)
    watch.call_started("a")
    watch.call_started("a")  # a heartbeat and a sync at once
    watch.call_ended("a", now_ms=1_000)
    assert watch.in_flight("a") == 1
    assert watch.silent({"a"}, now_ms=60_000) == []
    watch.call_ended("a", now_ms=60_000)
    assert watch.silent({"a"}, now_ms=62_000) == ["a"]


def test_members_never_seen_are_not_watched_and_members_gone_are_forgotten() -> None:
    watch = SilenceWatch(after_ms=2_000)
    watch.call_started("a")
    watch.call_ended("a", now_ms=0)
    assert watch.silent({"a", "restored"}, now_ms=5_000) == ["a"]
    assert watch.silent(set(), now_ms=6_000) == []  # "a" left the group: forgotten
    watch.call_ended("a", now_ms=7_000)  # a late answer to a member already forgotten changes nothing
    assert watch.silent({"a"}, now_ms=20_000) == []


@given(st.lists(st.tuples(st.sampled_from(["start", "end", "look"]), st.sampled_from("ab"),
                          st.integers(0, 3_000)), max_size=60))
def test_named_members_are_exactly_those_quiet_long_enough(steps: list[tuple[str, str, int]]) -> None:
    """Against a model: in flight counts, quiet-since times, and whether the spell was named."""
    watch = SilenceWatch(after_ms=2_000)
    now = 0
    in_flight: dict[str, int] = {}
    quiet_since: dict[str, int] = {}
    named_spell: set[str] = set()
    for kind, member, advance in steps:
        now += advance
        if kind == "start":
            watch.call_started(member)
            in_flight[member] = in_flight.get(member, 0) + 1
            named_spell.discard(member)
        elif kind == "end":
            watch.call_ended(member, now)
            if in_flight.get(member, 0) > 0:
                in_flight[member] -= 1
                if in_flight[member] == 0:
                    quiet_since[member] = now
        else:
            expected = sorted(m for m, n in in_flight.items() if n == 0 and m not in named_spell
                              and now - quiet_since[m] >= 2_000)
            assert watch.silent({"a", "b"}, now) == expected
            named_spell.update(expected)
        assert watch.in_flight(member) == in_flight.get(member, 0)
