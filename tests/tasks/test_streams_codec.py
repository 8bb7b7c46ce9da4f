"""The member's subscription: which offset sums a host reports for its tasks (KIP-441 lags)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from streams_rt.assignment.lag import is_caught_up
from streams_rt.protocol import LATEST_SUPPORTED_VERSION, OFFSET_SUM_RUNNING_ACTIVE, OFFSET_SUM_UNKNOWN, TaskId
from streams_rt.protocol.subscription import SubscriptionInfo, decode_subscription
from streams_rt.tasks.streams_codec import StreamsMemberCodec

ACTIVE, OPENED, KNOWN = TaskId(0, 0), TaskId(0, 1), TaskId(0, 2)


def reported(codec: StreamsMemberCodec) -> Mapping[TaskId, int]:
    info = decode_subscription(codec.encode_subscription(LATEST_SUPPORTED_VERSION, frozenset({ACTIVE}),
                                                         frozenset({OPENED, KNOWN})))
    assert isinstance(info, SubscriptionInfo)
    return info.task_offset_sums


def test_a_standby_the_host_has_no_sum_for_yet_is_reported_as_holding_nothing_not_as_unknown() -> None:
    """A standby opened a moment before a rebalance, with no checkpoint: Kafka's TaskManager reports
    no sum for it, so its lag is the whole changelog, and a short changelog counts as caught up. An
    "unknown" report made the assignor warm it up until the probing rebalance, minutes later."""
    sums = reported(StreamsMemberCodec(uuid.uuid4(), standby_offset_sums=lambda standby: {KNOWN: 40}))
    assert sums == {ACTIVE: OFFSET_SUM_RUNNING_ACTIVE, KNOWN: 40}
    assert is_caught_up(500, sums.get(OPENED), acceptable_recovery_lag=10_000)
    assert is_caught_up(500, sums.get(KNOWN), acceptable_recovery_lag=10_000)


def test_a_member_without_state_reporting_reports_its_standbys_as_unknown() -> None:
    sums = reported(StreamsMemberCodec(uuid.uuid4()))
    assert sums == {ACTIVE: OFFSET_SUM_RUNNING_ACTIVE, OPENED: OFFSET_SUM_UNKNOWN, KNOWN: OFFSET_SUM_UNKNOWN}
