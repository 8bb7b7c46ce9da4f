"""Errors of the coordinator's own round planning (not on the wire: see `streams_rt.rpc.errors`)."""

from __future__ import annotations


class SubscriptionRejected(Exception):
    """Raised by the subscription decoder: the user data cannot be read (AssignorError code). Here,
    not in the server, so the pure round planner raises it without importing the RPC layer."""

    def __init__(self, message: str, assignor_error: int) -> None:
        super().__init__(message)
        self.assignor_error = assignor_error
