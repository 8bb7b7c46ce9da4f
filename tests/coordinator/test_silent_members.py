"""A member killed where no held call of its could drop (between two heartbeats) or while it held a
sync (during a round) is found by its host's probe, not after its session timeout: with real Flight
RPC, a member's calls made by this process or by a real OS process that is killed, and endpoints
that are real sockets (a closed port refuses; a listening one that never answers is alive)."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.rpc.auth import SECRET_ENV
from streams_rt.rpc.client import GroupClient
from streams_rt.rpc.messages import (
    JoinRequest,
    JoinResponse,
    ReportTasksRequest,
    ReportTasksResponse,
    SyncRequest,
    SyncResponse,
)
from streams_rt.tasks.streams_codec import StreamsMemberCodec
from tests.coordinator.harness import REPO, TEST_SETTINGS, GatedPlanner, wait_until

SESSION_MS = 120_000  # far beyond every wait here: a member removed was removed by a probe
WAIT_S = 30


@pytest.fixture
def gated() -> Iterator[tuple[Coordinator, GatedPlanner]]:
    planner = GatedPlanner()
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0), planner, settings=TEST_SETTINGS)
    yield coordinator, planner
    planner.gate.set()
    coordinator.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def join_fields(member_id: str, generation: int) -> dict[str, object]:
    user_data = StreamsMemberCodec(uuid.uuid4()).encode_subscription(11, frozenset(), frozenset())
    return {"group_id": "app", "member_id": member_id, "protocol": "COOPERATIVE",
            "user_data": user_data, "session_timeout_ms": SESSION_MS, "rebalance_timeout_ms": SESSION_MS,
            "generation": generation}


def member_with_endpoint(coordinator: Coordinator, endpoint: str) -> tuple[str, int]:
    """A member that joined, got its first assignment and reported `endpoint`, then makes no call."""
    with GroupClient(coordinator.address, secret=coordinator.secret, timeout_s=10) as client:
        joined = client.call(JoinRequest(**join_fields("", -1)), JoinResponse)  # type: ignore[arg-type]
        joined.raise_for_error()

        def first_assignment() -> SyncResponse | None:
            answer = client.call(SyncRequest("app", joined.member_id, -1, wait_ms=500), SyncResponse)
            return answer if answer.ready else None

        synced = wait_until(first_assignment, WAIT_S, "the first assignment")
        client.call(ReportTasksRequest("app", joined.member_id, synced.generation, endpoint, {}),
                    ReportTasksResponse).raise_for_error()
    return joined.member_id, synced.generation


def test_a_member_that_goes_quiet_is_probed_and_removed_if_its_host_refuses(
    coordinator: Coordinator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="streams_rt.coordinator")
    endpoint = f"grpc://127.0.0.1:{closed_port()}"
    member_id, _ = member_with_endpoint(coordinator, endpoint)
    wait_until(lambda: member_id not in coordinator.describe()["members"], WAIT_S, "the quiet member removed")
    assert f"member {member_id} removed: its host at {endpoint} refuses connections (no call from it for " \
           "2000 ms)" in caplog.text, caplog.text


def test_a_quiet_member_whose_host_accepts_connections_is_kept(
    coordinator: Coordinator, caplog: pytest.LogCaptureFixture
) -> None:
    """Slow is not dead: a host that accepts connections but does not answer keeps its member."""
    caplog.set_level("INFO", logger="streams_rt.coordinator")
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        endpoint = f"grpc://127.0.0.1:{listening.getsockname()[1]}"
        member_id, _ = member_with_endpoint(coordinator, endpoint)
        wait_until(lambda: f"probe of the host at {endpoint} (no call from it for 2000 ms): NO_ANSWER" in caplog.text,
                   WAIT_S, "the quiet member's host probed")
    assert member_id in coordinator.describe()["members"]


def test_a_member_killed_while_holding_a_sync_is_probed_at_once(
    gated: tuple[Coordinator, GatedPlanner], caplog: pytest.LogCaptureFixture
) -> None:
    """During a round a member holds a sync, not a heartbeat; a killed one's dropped sync starts the
    probe (without waiting for its silence)."""
    coordinator, planner = gated
    caplog.set_level("INFO", logger="streams_rt.coordinator")
    endpoint = f"grpc://127.0.0.1:{closed_port()}"
    member_id, generation = member_with_endpoint(coordinator, endpoint)
    planner.gate.clear()
    coordinator.request_rebalance("a test")
    rejoin = {**join_fields(member_id, generation)}
    rejoin["user_data"] = base64.b64encode(rejoin["user_data"]).decode()  # type: ignore[arg-type]
    calls = [["join", rejoin],
             ["sync", {"group_id": "app", "member_id": member_id, "generation": generation, "wait_ms": 5_000}]]
    env = {k: v for k, v in os.environ.items() if k != SECRET_ENV}
    env.update(coordinator.secret.environment() if coordinator.secret else {})
    member = subprocess.Popen([sys.executable, "-m", "tests.coordinator.raw_client", "--coordinator",
                               coordinator.address, json.dumps(calls)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert member.stdout is not None
        assert json.loads(member.stdout.readline())["error"] == "NONE"  # rejoined; its sync follows at once
        wait_until(planner.computing.is_set, WAIT_S, "the round held at the gate")
        wait_until(lambda: coordinator.describe()["members"][member_id]["calls_in_flight"] == 1, WAIT_S,
                   "its sync held (for up to 5 s: the round waits at the gate)")
    finally:
        member.send_signal(signal.SIGKILL)
        member.wait()
    wait_until(lambda: member_id not in coordinator.describe()["members"], WAIT_S, "the killed member removed")
    assert f"member {member_id} removed: its host at {endpoint} refuses connections (its sync's connection " \
           "dropped)" in caplog.text, caplog.text
