"""The version rules of both sides: the leader's (RoundVersions: the versions a round answers at)
and the member's (on receiving an assignment)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams_rt.protocol import (
    EARLIEST_PROBEABLE_VERSION,
    LATEST_SUPPORTED_VERSION,
    FutureSubscriptionInfo,
    RoundVersions,
    SubscriptionInfo,
    SubscriptionVersions,
    VersionAction,
    VersionMismatch,
    on_assignment_version,
)


def sub(version: int, latest: int | None = None) -> SubscriptionInfo:
    return SubscriptionInfo.for_version(version, uuid.uuid4(), latest_supported_version=latest or version)


# ---- the leader ------------------------------------------------------------------------------------
def test_a_round_answers_at_the_lowest_used_version_and_advertises_the_lowest_latest() -> None:
    v = RoundVersions.of([sub(10, 11), sub(11, 11), sub(9, 10)], 11)
    assert (v.used, v.commonly_supported, v.probing) == (9, 10, False)


def test_a_future_subscription_probes_at_the_leaders_latest() -> None:
    v = RoundVersions.of([sub(11, 11), FutureSubscriptionInfo(12, 12)], 11)
    assert (v.used, v.commonly_supported, v.probing) == (11, 11, True)


def test_v1_and_v2_subscriptions_have_no_latest_field_so_their_version_counts() -> None:
    v = RoundVersions.of([sub(2), sub(11)], 11)
    assert (v.used, v.commonly_supported) == (2, 2)


def test_upgrade_from_caps_both_versions() -> None:
    v = RoundVersions.of([sub(11, 11), sub(10, 11)], 11, cap=2)
    assert (v.used, v.commonly_supported, v.probing) == (2, 2, False)
    assert RoundVersions.of([sub(11)], 9, cap=10) == RoundVersions(9, 9, True)  # a cap above our latest


def subscriptions(latest: int) -> st.SearchStrategy[list[SubscriptionVersions]]:
    def one(version: int, extra: int) -> SubscriptionVersions:
        if version > LATEST_SUPPORTED_VERSION:
            return FutureSubscriptionInfo(version, version + extra)
        return sub(version, min(version + extra, LATEST_SUPPORTED_VERSION + 3) if version >= 3 else None)
    member = st.builds(one, st.integers(1, latest + 3), st.integers(0, 3))
    return st.lists(member, min_size=1, max_size=8)


@given(st.integers(EARLIEST_PROBEABLE_VERSION, LATEST_SUPPORTED_VERSION).flatmap(
    lambda latest: st.tuples(st.just(latest), subscriptions(latest), st.none() | st.integers(1, latest + 2))))
def test_a_round_answers_at_a_version_every_member_reads(
    case: tuple[int, list[SubscriptionVersions], int | None],
) -> None:
    latest, subs, cap = case
    v = RoundVersions.of(subs, latest, cap)
    ceiling = latest if cap is None else min(cap, latest)
    assert v.used <= v.commonly_supported <= ceiling
    assert v.used == min(min(s.version, ceiling) for s in subs)  # every member reads the answer
    assert v.probing == any(s.version > latest for s in subs)


# ---- the member ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "received", "commonly", "action", "next_version"),
    [
        (11, 11, 11, VersionAction.KEEP, 11),
        (11, 9, 9, VersionAction.DOWNGRADE, 9),  # the leader is older
        (11, 3, 3, VersionAction.DOWNGRADE, 3),
        (11, 2, -1, VersionAction.KEEP, 11),  # v1-2 carry no commonly supported version
        (9, 9, 11, VersionAction.UPGRADE, 11),  # end of the rolling upgrade
        (2, 2, -1, VersionAction.KEEP, 2),
        (7, 3, 8, VersionAction.UPGRADE, 8),  # upgrade wins over downgrade, as in Kafka
    ],
)
def test_rules(used: int, received: int, commonly: int, action: VersionAction, next_version: int) -> None:
    decision = on_assignment_version(used, received, commonly)
    assert (decision.action, decision.next_version) == (action, next_version)
    assert decision.rejoin == (action is not VersionAction.KEEP)


def test_received_above_sent_is_an_error() -> None:
    with pytest.raises(VersionMismatch, match="sent a version 9 subscription"):
        on_assignment_version(9, 10, 10)


def test_commonly_supported_above_our_latest_is_an_error() -> None:
    with pytest.raises(VersionMismatch, match="commonly supported version 12"):
        on_assignment_version(11, 11, 12)
