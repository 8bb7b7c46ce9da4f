"""Group-level error codes carried in every RPC response, named after Kafka's protocol errors.

They are separate from AssignorError: these say whether a call was accepted by the group
(membership, generation fencing), AssignorError says what went wrong with an assignment."""

from __future__ import annotations

import enum


class GroupError(enum.Enum):
    NONE = "NONE"
    # Retriable: the member must rejoin (keeping what it owns).
    REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS"
    # Retriable: the call carried an old generation; the member lost its tasks and must rejoin.
    ILLEGAL_GENERATION = "ILLEGAL_GENERATION"
    # Retriable: the coordinator no longer knows the member (session expired, removed); rejoin as new.
    UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
    # Fatal: another process has taken over this group.instance.id.
    FENCED_INSTANCE_ID = "FENCED_INSTANCE_ID"
    # Fatal: the member's subscription user data cannot be read; AssignorError says more.
    ASSIGNOR_ERROR = "ASSIGNOR_ERROR"
    # Fatal: the request itself does not follow the message schema.
    INVALID_REQUEST = "INVALID_REQUEST"
    # Fatal: the request names another group (application.id).
    INCONSISTENT_GROUP = "INCONSISTENT_GROUP"
    # Fatal: the server failed on its own; it logged why (clients get no traceback).
    UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"

    @property
    def retriable(self) -> bool:
        return self in _RETRIABLE


_RETRIABLE = frozenset(
    {GroupError.REBALANCE_IN_PROGRESS, GroupError.ILLEGAL_GENERATION, GroupError.UNKNOWN_MEMBER_ID}
)


class GroupErrorException(Exception):
    """A call refused by the group; `error` is what goes on the wire, the message says why."""

    def __init__(self, error: GroupError, message: str, assignor_error: int = 0) -> None:
        super().__init__(f"{error.value}: {message}")
        self.error = error
        self.message = message
        self.assignor_error = assignor_error

    @property
    def retriable(self) -> bool:
        return self.error.retriable


QUOTE_LIMIT = 40
MAX_MESSAGE_CHARS = 512  # the longest `message` a server sends


def shorten(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters, saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def abbreviate(value: object, limit: int = QUOTE_LIMIT) -> str:
    """The repr of at most `limit` characters of `value`, with its full length when cut: an error
    message quotes what it received without echoing a huge field back to the sender (or the log)."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else text
    return f"{text[:limit]!r}... ({len(text)} characters)"
