"""Member-side version rules on receiving an assignment."""

from __future__ import annotations

import pytest

from streams_rt.protocol import VersionAction, VersionMismatch, on_assignment_version


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
