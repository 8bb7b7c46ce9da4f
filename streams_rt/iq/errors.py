"""Every refusal of the query endpoint: an HTTP status, a code a client can act on, a message a
person can read, and what else helps (restore progress, the lag, Retry-After). Answered as JSON;
never a traceback."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RETRY_AFTER_S = 1


class QueryFailed(Exception):
    def __init__(self, status: int, code: str, message: str, detail: Mapping[str, Any] | None = None,
                 retry_after_s: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.detail = dict(detail or {})
        self.retry_after_s = retry_after_s

    def body(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.detail}

    def headers(self) -> dict[str, str]:
        return {} if self.retry_after_s is None else {"Retry-After": str(self.retry_after_s)}


def bad_request(code: str, message: str, **detail: Any) -> QueryFailed:
    return QueryFailed(400, code, message, detail)


def not_found(code: str, message: str, **detail: Any) -> QueryFailed:
    return QueryFailed(404, code, message, detail)


def unavailable(code: str, message: str, **detail: Any) -> QueryFailed:
    """503: the answer may come later (a restore, a rebalance, a standby catching up)."""
    return QueryFailed(503, code, message, detail, retry_after_s=RETRY_AFTER_S)
