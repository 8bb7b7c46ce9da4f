"""The assignor runs outside the group lock, over real Flight: while a round is being computed (held
here at a gate inside the planner), joins, syncs, heartbeats and describe are all answered, and a
membership change supersedes the round in flight, which then stops at its next step."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.protocol import decode_assignment
from streams_rt.rpc.client import GroupClient
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import (
    DescribeRequest,
    DescribeResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    SyncRequest,
    SyncResponse,
)
from streams_rt.tasks.streams_codec import StreamsMemberCodec
from tests.coordinator.harness import TASKS, TEST_SETTINGS, GatedPlanner, wait_until


@pytest.fixture
def planner() -> GatedPlanner:
    return GatedPlanner()


@pytest.fixture
def coordinator(planner: GatedPlanner) -> Iterator[Coordinator]:
    c = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0), planner, settings=TEST_SETTINGS)
    yield c
    planner.gate.set()
    c.close()


class RawMember:
    """A well-behaved member speaking raw RPC; every call times out (fails) within 5 s."""

    def __init__(self, coordinator: Coordinator) -> None:
        self.client = GroupClient(coordinator.address, timeout_s=5, secret=coordinator.secret)
        self.user_data = StreamsMemberCodec(uuid.uuid4()).encode_subscription(11, frozenset(), frozenset())
        self.member_id = ""
        self.generation = -1

    def join(self) -> JoinResponse:
        resp = self.client.call(JoinRequest("app", self.member_id, "COOPERATIVE", self.user_data, 10_000, 10_000,
                                            generation=self.generation), JoinResponse)
        resp.raise_for_error()
        self.member_id = resp.member_id
        return resp

    def sync(self, wait_ms: int) -> SyncResponse:
        resp = self.client.call(SyncRequest("app", self.member_id, self.generation, wait_ms=wait_ms), SyncResponse,
                                extra_timeout_s=wait_ms / 1000)
        resp.raise_for_error()
        if resp.ready:
            self.generation = resp.generation
        return resp

    def heartbeat(self) -> HeartbeatResponse:
        return self.client.call(HeartbeatRequest("app", self.member_id, self.generation), HeartbeatResponse)


def test_a_round_in_flight_stalls_no_call_and_a_change_supersedes_it(
    coordinator: Coordinator, planner: GatedPlanner
) -> None:
    a, b, c = RawMember(coordinator), RawMember(coordinator), RawMember(coordinator)
    a.join()
    assert a.sync(5000).generation == 1

    planner.gate.clear()
    b.join()
    assert a.heartbeat().error == GroupError.REBALANCE_IN_PROGRESS.value
    a.join()  # everyone has joined: the round is handed to the planner, which waits at the gate
    wait_until(planner.computing.is_set, 10, "the round to reach the planner")

    # With the round held inside the assignor, every call is still answered.
    d = a.client.call(DescribeRequest("app"), DescribeResponse)
    assert d.state == "COMPLETING_REBALANCE" and d.generation == 1
    assert not a.sync(100).ready and not b.sync(100).ready
    assert a.heartbeat().error == GroupError.REBALANCE_IN_PROGRESS.value
    c.join()  # a new member supersedes the round in flight
    assert planner.computing.is_set() and not planner.gate.is_set(), "all of this ran while the round was held"

    planner.gate.set()
    got = {m: m.sync(5000) for m in (a, b, c)}
    assert {r.generation for r in got.values()} == {2}, "the superseded outcome was dropped, not applied"
    assert planner.rounds[-1] == sorted([a.member_id, b.member_id, c.member_id])
    # The superseded round stopped at its first step after the gate: only the others ran to their end.
    assert planner.rounds[-2] == sorted([a.member_id, b.member_id])
    assert planner.finished == [planner.rounds[0], planner.rounds[-1]]
    active = [t for r in got.values() for t in decode_assignment(r.user_data).active_tasks]
    assert sorted(active) == sorted(TASKS)


def test_a_shutdown_requested_while_a_round_is_computed_is_in_the_round_delivered(
    coordinator: Coordinator, planner: GatedPlanner
) -> None:
    """The planner's settings changed mid-round: the round is computed again with them."""
    a = RawMember(coordinator)
    planner.gate.clear()
    a.join()
    wait_until(planner.computing.is_set, 10, "the round to reach the planner")
    coordinator.request_shutdown("test")
    planner.gate.set()
    got = a.sync(5000)
    assert decode_assignment(got.user_data).error_code == 4 and got.generation == 1  # SHUTDOWN_REQUESTED
