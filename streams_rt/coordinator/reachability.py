"""Fast detection of a dead host. Three signs start a probe: a member's held heartbeat or sync
whose connection dropped (a killed process's sockets close at once, so this takes milliseconds, with
or without batches running), a member with no call in flight for a while (killed between two calls:
SilenceWatch), and a reader that cannot connect to a task's owner host and reports its endpoint.
The coordinator takes none of them as proof: it probes the endpoint itself, off the group lock,
and only a host that refuses connections counts as dead (its member is then removed at once
instead of after session.timeout.ms). A probe that gets no answer in time removes nothing: a slow
host is not a dead one, and its session timeout still covers it."""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.batches import BatchError, HostClient

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2.0
PROBE_ATTEMPTS = 2  # a host counts as dead only if every attempt is refused
PROBE_PAUSE_S = 0.02


class Reachability(enum.Enum):
    ANSWERS = "ANSWERS"  # the host answered its `status` action
    REFUSED = "REFUSED"  # the connection failed (refused, reset, no route): nothing listens there
    NO_ANSWER = "NO_ANSWER"  # it timed out or answered with an error: alive, maybe slow


def probe_host(endpoint: str, *, secret: SharedSecret | None, tls_root_certs: bytes | None,
               timeout_s: float = PROBE_TIMEOUT_S, attempts: int = PROBE_ATTEMPTS,
               pause_s: float = PROBE_PAUSE_S) -> Reachability:
    """Ask the host at `endpoint` for its status, up to `attempts` times while it refuses: REFUSED
    only when every attempt was. gRPC reports a failed TLS handshake as it reports a refused
    connection; something listens there, so that counts as NO_ANSWER."""
    for attempt in range(attempts):
        if attempt:
            time.sleep(pause_s)
        try:
            with HostClient(endpoint, timeout_s=timeout_s, secret=secret, tls_root_certs=tls_root_certs) as host:
                host.status()
            return Reachability.ANSWERS
        except BatchError as e:
            if e.code != "UNREACHABLE" or "handshake" in e.message.lower():
                return Reachability.NO_ANSWER
    return Reachability.REFUSED


class UnreachableProber:
    """Probes reported endpoints on its own threads, one probe at a time per endpoint (repeated
    reports while one runs are folded into it), and hands every REFUSED endpoint to `on_refused`,
    with why it was probed."""

    def __init__(self, probe: Callable[[str], Reachability], on_refused: Callable[[str, str], None],
                 workers: int = 2) -> None:
        self._probe = probe
        self._on_refused = on_refused
        self._lock = threading.Lock()
        self._probing: set[str] = set()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="coordinator-probe")

    def report(self, endpoint: str, why: str) -> None:
        """Probe `endpoint` (`why`: what made it suspect), unless a probe of it is running already:
        this report joins that one."""
        with self._lock:
            if endpoint in self._probing:
                return
            self._probing.add(endpoint)
        try:
            self._pool.submit(self._run, endpoint, why)
        except RuntimeError:  # closed: the host's session timeout still covers it
            with self._lock:
                self._probing.discard(endpoint)

    def _run(self, endpoint: str, why: str) -> None:
        try:
            found = self._probe(endpoint)
            log.info("probe of the host at %s (%s): %s", endpoint, why, found.value)
            if found is Reachability.REFUSED:
                self._on_refused(endpoint, why)
        except Exception:  # a bug: the log has it; the host's session timeout still applies
            log.exception("probe of the host at %s failed", endpoint)
        finally:
            with self._lock:
                self._probing.discard(endpoint)

    def close(self) -> None:
        """Drop the probes not started; one running ends on its own (bounded by its timeout)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
