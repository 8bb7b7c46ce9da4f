"""Shared-secret authentication for every Flight endpoint of one application run, as Spark's
`spark.authenticate`: the driver makes a random secret per run and hands it to the hosts it starts
in their environment; every call carries it in a header; a server checks it in a middleware, before
any handler runs, with a constant-time comparison. The secret never appears in a repr or a log."""

from __future__ import annotations

import hmac
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Mapping, Sequence

import pyarrow.flight as flight

log = logging.getLogger(__name__)

SECRET_ENV = "STREAMS_RT_AUTH_SECRET"  # how the driver hands the secret to the processes it starts
SECRET_BYTES = 32
SECRET_HEADER = "authorization"
_SCHEME = "Bearer "
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43,512}")  # URL-safe base64 of at least 32 random bytes
REFUSAL_LOG_INTERVAL_S = 60.0


class SharedSecret:
    """One application run's secret. Compare with `accepts`; hand it on with `environment()`."""

    __slots__ = ("_token",)

    def __init__(self, token: str) -> None:
        """Raises ValueError (without quoting the value) for anything but 32+ bytes of URL-safe base64."""
        if not _TOKEN.fullmatch(token):
            raise ValueError(
                f"a shared secret is {SECRET_BYTES}+ random bytes as URL-safe base64 (43 to 512 characters"
                f" of A-Z a-z 0-9 _ -); the value given ({len(token)} characters) is not"
            )
        self._token = token

    @classmethod
    def generate(cls) -> SharedSecret:
        return cls(secrets.token_urlsafe(SECRET_BYTES))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> SharedSecret | None:
        """The secret the driver handed this process, or None when it handed none."""
        token = environ.get(SECRET_ENV)
        if token is None:
            return None
        try:
            return cls(token)
        except ValueError as e:
            raise ValueError(f"{SECRET_ENV}: {e}") from None

    @property
    def token(self) -> str:
        """The secret itself, to hand on to a process of this run (never log it)."""
        return self._token

    def environment(self) -> dict[str, str]:
        """What to add to the environment of a process this driver starts."""
        return {SECRET_ENV: self._token}

    def call_headers(self) -> list[tuple[bytes, bytes]]:
        """The header every call to a server of this run carries."""
        return [(SECRET_HEADER.encode("ascii"), (_SCHEME + self._token).encode("ascii"))]

    def accepts(self, headers: Mapping[str, Sequence[str | bytes]]) -> bool:
        """Whether a call's headers (Flight's: lower-case names, lists of values) carry this secret:
        exactly one value, compared in constant time."""
        values = headers.get(SECRET_HEADER, ())
        if len(values) != 1:
            return False
        presented = values[0]
        if isinstance(presented, str):
            presented = presented.encode("utf-8", "replace")
        return hmac.compare_digest(presented, (_SCHEME + self._token).encode("ascii"))

    def __repr__(self) -> str:
        return "SharedSecret(<redacted>)"


class RefusalLog:
    """Counts a server's refused calls and logs them at most once a minute, with their count, so a
    flood cannot fill the log."""

    def __init__(self, server_name: str) -> None:
        self._server_name = server_name
        self._lock = threading.Lock()
        self._unlogged = 0
        self._next_log_at = 0.0
        self.refused = 0

    def refused_one(self, what: object) -> None:
        with self._lock:
            self.refused += 1
            self._unlogged += 1
            now = time.monotonic()
            if now < self._next_log_at:
                return
            count, self._unlogged = self._unlogged, 0
            self._next_log_at = now + REFUSAL_LOG_INTERVAL_S
        log.warning("%s: refused %d call(s) without this application's secret (latest: %s)",
                    self._server_name, count, what)


class SecretCheck(flight.ServerMiddlewareFactory):
    """Flight server middleware: refuses every call without the secret before its handler runs."""

    def __init__(self, secret: SharedSecret, server_name: str) -> None:
        super().__init__()
        self._secret = secret
        self.refusals = RefusalLog(server_name)

    @property
    def refused(self) -> int:
        return self.refusals.refused

    def start_call(self, info: flight.CallInfo, headers: dict[str, list[str] | list[bytes]]) -> None:
        if self._secret.accepts(headers):
            return None
        self.refusals.refused_one(info.method)
        raise flight.FlightUnauthenticatedError("refused: the call does not carry this application's secret")
