"""The one exception every decoder raises for bytes it cannot accept.

It names the version and byte offset so that an operator can find the bad member and the bad
field in a packet capture, instead of getting an IndexError from deep inside a loop."""

from __future__ import annotations


class MalformedUserData(ValueError):
    """Subscription or assignment user data that is truncated, inconsistent or not Kafka's format."""

    def __init__(self, kind: str, version: int | None, offset: int, reason: str) -> None:
        self.kind = kind
        self.version = version
        self.offset = offset
        self.reason = reason
        shown = "unknown" if version is None else str(version)
        super().__init__(f"malformed {kind} user data (version {shown}) at byte {offset}: {reason}")
