"""AssignmentInfo error codes reach the hosts (separate processes): SHUTDOWN_REQUESTED (KIP-725's
request_shutdown, an operator action) stops every host cleanly; INCOMPLETE_SOURCE_TOPIC_METADATA and
ASSIGNMENT_ERROR stop a host with a typed failure and nothing of that assignment applied."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from streams_rt.coordinator.group import Member, MemberAssignment, RoundOutcome, SupersededCheck, never_superseded
from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from streams_rt.coordinator.user_data import AssignmentContent, RoundContent
from streams_rt.protocol import AssignorError, RebalanceProtocol
from streams_rt.rpc.client import GroupClient
from streams_rt.rpc.messages import RequestShutdownRequest, RequestShutdownResponse
from tests.coordinator.harness import TASKS, TEST_SETTINGS, Host, HostFactory, settled, wait_until

COOPERATIVE = RebalanceProtocol.COOPERATIVE


def held_at_exit(h: Host) -> set[str]:
    """What the host's callbacks say it still held when it exited (assigned minus revoked/lost)."""
    held: set[str] = set()
    for e in h.events():
        if e["event"] == "assigned":
            held |= set(e["tasks"])
        elif e["event"] in ("revoked", "lost"):
            held -= set(e["tasks"])
    return held


def test_request_shutdown_stops_every_host_cleanly(coordinator: Coordinator, hosts: HostFactory) -> None:
    live = [hosts.start(n) for n in ("a", "b", "c")]
    before = settled(coordinator, live)
    client = GroupClient(coordinator.address, secret=coordinator.secret)
    try:
        client.call(RequestShutdownRequest(group_id="app", reason="test"), RequestShutdownResponse).raise_for_error()
    finally:
        client.close()
    for h in live:
        assert h.proc.wait(30) == 0, h.stderr()
        shutdown = h.events("shutdown")
        assert len(shutdown) == 1 and shutdown[0]["generation"] > before["generation"]
        held = set(before["hosts"][h.name]["active"])
        assert held <= {t for e in h.events("revoked") for t in e["tasks"]}, "revoked what it held"
        assert not h.events("lost") and not h.events("failed")
    assert not [h.name for h in live if held_at_exit(h)]
    wait_until(lambda: coordinator.describe()["state"] == "EMPTY", 30, "every host to leave the group")


class ErrorPlanner(StreamsRoundPlanner):
    """Answers every round after `error` is set with that AssignorError and some tasks (which the
    member must not apply)."""

    error: AssignorError | None = None

    def __call__(self, members: Mapping[str, Member], generation: int, now_ms: int,
                 check: SupersededCheck = never_superseded) -> RoundOutcome:
        if self.error is None:
            return super().__call__(members, generation, now_ms, check)
        write = self.codec.assignment_writer(11, 11, RoundContent(error_code=self.error))
        data = write(AssignmentContent(tuple(sorted(TASKS))))
        return RoundOutcome({mid: MemberAssignment(generation, COOPERATIVE, data) for mid in members}, COOPERATIVE)


@pytest.mark.parametrize("code", [AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA, AssignorError.ASSIGNMENT_ERROR])
def test_an_assignor_error_stops_the_host_with_a_typed_failure(tmp_path: Path, code: AssignorError) -> None:
    planner = ErrorPlanner(TASKS)
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0), planner, settings=TEST_SETTINGS)
    hosts = HostFactory(coordinator, tmp_path)
    try:
        live = [hosts.start(n) for n in ("a", "b")]
        before = settled(coordinator, live)
        planner.error = code
        coordinator.request_rebalance("test: the next round fails")
        for h in live:
            assert h.proc.wait(30) == 2, h.stderr()
            (failed,) = h.events("failed")
            assert failed["assignor_error"] == int(code) and code.name in failed["message"]
            assert h.stderr().count(code.name) == 1, "logged once"
            assert not [e for e in h.events("assigned") if e["generation"] > before["generation"]], "not applied"
        assert not [h.name for h in live if held_at_exit(h)]
    finally:
        hosts.cleanup()
        coordinator.close()
