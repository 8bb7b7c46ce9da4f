"""The coordinator's probe of a reported host, against real sockets: a closed port is REFUSED, a
port that accepts connections but never answers (a stopped or overloaded host) is NO_ANSWER, not
dead; and repeated reports of one endpoint share one probe."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from streams_rt.coordinator.reachability import Reachability, UnreachableProber, probe_host


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed now: nothing listens there


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose connections the kernel accepts (listen backlog) and nobody ever reads."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


def test_a_closed_port_is_refused() -> None:
    endpoint = f"grpc://127.0.0.1:{free_port()}"
    assert probe_host(endpoint, secret=None, tls_root_certs=None, timeout_s=2) is Reachability.REFUSED


def test_a_host_that_never_answers_is_not_counted_dead(silent_port: int) -> None:
    endpoint = f"grpc://127.0.0.1:{silent_port}"
    found = probe_host(endpoint, secret=None, tls_root_certs=None, timeout_s=0.5)
    assert found is Reachability.NO_ANSWER


def test_repeated_reports_of_one_endpoint_share_one_probe() -> None:
    release, started, done = threading.Event(), threading.Event(), threading.Event()
    probed: list[str] = []
    refused: list[str] = []

    def probe(endpoint: str) -> Reachability:
        probed.append(endpoint)
        started.set()
        release.wait(10)
        return Reachability.REFUSED if endpoint == "grpc://dead:1" else Reachability.ANSWERS

    def on_refused(endpoint: str, why: str) -> None:
        assert why == "reported by a test"
        refused.append(endpoint)
        done.set()

    prober = UnreachableProber(probe, on_refused, workers=1)
    try:
        prober.report("grpc://dead:1", "reported by a test")
        assert started.wait(10)
        for _ in range(5):
            prober.report("grpc://dead:1", "reported by a test")  # folded into the running probe
        release.set()
        assert done.wait(10)
        assert probed == ["grpc://dead:1"] and refused == ["grpc://dead:1"]
        deadline = time.monotonic() + 10
        while len(probed) < 2:  # once that probe has ended, a new report probes again
            assert time.monotonic() < deadline, "a report after the probe ended started none"
            prober.report("grpc://dead:1", "reported by a test")
            time.sleep(0.01)
        assert probed == ["grpc://dead:1"] * 2
    finally:
        prober.close()
