"""The bounds a join is held to before the group sees it, as Kafka's broker holds JoinGroup to
group.min/max.session.timeout.ms: one member's extreme values must not stall every later round."""

from __future__ import annotations

from typing import NoReturn

from streams_rt.rpc.errors import GroupError, GroupErrorException
from streams_rt.rpc.messages import JoinRequest
from streams_rt.rpc.settings import ControlPlaneSettings


def check_join(req: JoinRequest, settings: ControlPlaneSettings) -> None:
    """Raises GroupErrorException(INVALID_REQUEST) naming the field out of bounds."""
    if len(req.user_data) > settings.max_subscription_bytes:
        _refuse(f"field 'user_data' is {len(req.user_data)} bytes, above group.max.subscription.bytes"
                f" ({settings.max_subscription_bytes})")
    if not settings.min_session_timeout_ms <= req.session_timeout_ms <= settings.max_session_timeout_ms:
        _refuse(f"field 'session_timeout_ms' is {req.session_timeout_ms}, outside [{settings.min_session_timeout_ms},"
                f" {settings.max_session_timeout_ms}] (group.min/max.session.timeout.ms)")
    if req.rebalance_timeout_ms > settings.max_rebalance_timeout_ms:
        _refuse(f"field 'rebalance_timeout_ms' is {req.rebalance_timeout_ms}, above group.max.rebalance.timeout.ms"
                f" ({settings.max_rebalance_timeout_ms})")


def _refuse(why: str) -> NoReturn:
    raise GroupErrorException(GroupError.INVALID_REQUEST, f"JoinRequest: {why}")
