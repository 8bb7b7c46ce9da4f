"""The suite's baseline: with no fault, the verifier finds the application's outputs and final
state equal to the reference under both guarantees, and every invariant holds. A verifier that
passed everything would pass here too, so its own test (test_verifier.py) shows it failing."""

from __future__ import annotations

import random
import socket
from urllib.parse import urlparse

import pytest

from tests.faults.conftest import Runs
from tests.faults.harness import SummaryRow

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("guarantee", [pytest.param("at_least_once", marks=pytest.mark.faults),
                                       pytest.param("exactly_once_v2", marks=pytest.mark.faults_short)])
def test_a_clean_run_equals_the_reference(runs: Runs, summary: list[SummaryRow], guarantee: str) -> None:
    """Garbage thrown at every RPC port (the coordinator's, each host's) on the way changes nothing."""
    run = runs.start(guarantee, duration_s=5.0)
    run.settle(hosts=3)
    endpoints = [run.app.coordinator.address] + [str(h.endpoint) for h in run.app.hosts.values()]
    for endpoint in endpoints:
        throw_garbage(endpoint)
    run.settle(hosts=3)
    verdict = run.finish("none (clean run)", summary)
    assert verdict.passed, verdict.problems
    assert verdict.lost == 0 and verdict.duplicated == 0
    assert verdict.verified == verdict.produced == 20 * 250


def throw_garbage(endpoint: str) -> None:
    """Raw bytes at a gRPC port, as a port scanner or a misdirected client sends them: random
    bytes, an HTTP/1.1 request, half an HTTP/2 preface; each on its own connection."""
    address = urlparse(endpoint)
    rng = random.Random(endpoint)
    for payload in (bytes(rng.randrange(256) for _ in range(4096)), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\xff\x04\x00"):
        with socket.create_connection((address.hostname, address.port), timeout=5) as connection:
            connection.sendall(payload)
            connection.settimeout(2)
            try:
                connection.recv(1024)
            except (TimeoutError, ConnectionResetError):
                pass
