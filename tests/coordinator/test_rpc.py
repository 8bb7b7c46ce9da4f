"""The Flight endpoint over a real socket: schemas are enforced and errors come back typed."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping

import pyarrow.flight as flight
import pytest

from streams_rt.coordinator.errors import SubscriptionRejected
from streams_rt.coordinator.group import (
    Member,
    MemberAssignment,
    RoundOutcome,
    SupersededCheck,
    assignment_inputs_changed,
    never_superseded,
)
from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.protocol import RebalanceProtocol
from streams_rt.rpc.client import CoordinatorUnavailable, GroupClient
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import (
    DescribeRequest,
    DescribeResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    RequestShutdownRequest,
    RequestShutdownResponse,
    SetProtocolRequest,
    SetProtocolResponse,
    SyncRequest,
    SyncResponse,
)
from tests.coordinator.harness import TEST_SETTINGS, authenticated

COOPERATIVE = RebalanceProtocol.COOPERATIVE


class EchoPlanner:
    """Accepts any user data except b'bad'; gives each member its own user data back."""

    static_rejoin_change = staticmethod(assignment_inputs_changed)

    def decode_subscription(self, data: bytes) -> bytes:
        if data == b"bad":
            raise SubscriptionRejected("malformed subscription user data (version 99) at byte 0: test", 3)
        return data

    def __call__(self, members: Mapping[str, Member], generation: int, now_ms: int,
                 check: SupersededCheck = never_superseded) -> RoundOutcome:
        return RoundOutcome(
            {mid: MemberAssignment(generation, COOPERATIVE, m.subscription) for mid, m in members.items()},
            COOPERATIVE,
        )


@pytest.fixture
def coordinator() -> Iterator[Coordinator]:
    # These tests are about the calls: the first round is not held for more members.
    c = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0), EchoPlanner(), settings=TEST_SETTINGS)
    yield c
    c.close()


@pytest.fixture
def client(coordinator: Coordinator) -> Iterator[GroupClient]:
    cl = GroupClient(coordinator.address, timeout_s=5, secret=coordinator.secret)
    yield cl
    cl.close()


def join(client: GroupClient, user_data: bytes = b"sub", group: str = "app") -> JoinResponse:
    return client.call(JoinRequest(group, "", "COOPERATIVE", user_data, 2000, 2000), JoinResponse)


def test_binds_loopback_on_a_free_port(coordinator: Coordinator) -> None:
    assert coordinator.address.startswith("grpc://127.0.0.1:") and not coordinator.address.endswith(":0")


def test_join_sync_heartbeat_round_trip(client: GroupClient, coordinator: Coordinator) -> None:
    j = join(client)
    assert j.error == "NONE" and j.member_id
    s = client.call(SyncRequest("app", j.member_id, -1), SyncResponse)
    assert s.ready and s.generation == 1 and s.user_data == b"sub"
    hb = client.call(HeartbeatRequest("app", j.member_id, 1), HeartbeatResponse)
    assert hb.error == "NONE"
    d = client.call(DescribeRequest("app"), DescribeResponse)
    assert d.generation == 1 and d.state == "STABLE" and list(d.members) == [j.member_id]
    assert d.metrics["rebalance-total"] == 1


def test_stale_generation_is_refused_retriably_over_rpc(client: GroupClient) -> None:
    j = join(client)
    client.call(SyncRequest("app", j.member_id, -1), SyncResponse)
    hb = client.call(HeartbeatRequest("app", j.member_id, 0), HeartbeatResponse)
    assert hb.error == GroupError.ILLEGAL_GENERATION.value and GroupError(hb.error).retriable
    assert "stale" in hb.message


def test_unknown_member(client: GroupClient) -> None:
    hb = client.call(HeartbeatRequest("app", "ghost", 1), HeartbeatResponse)
    assert hb.error == GroupError.UNKNOWN_MEMBER_ID.value


def test_malformed_user_data_gets_that_member_an_assignor_error(client: GroupClient, coordinator: Coordinator) -> None:
    good = join(client)
    client.call(SyncRequest("app", good.member_id, -1), SyncResponse)
    bad = join(client, b"bad")
    assert bad.error == GroupError.ASSIGNOR_ERROR.value and bad.assignor_error == 3
    assert "byte 0" in bad.message
    # The group did not notice: still one member, still generation 1, no rebalance.
    d = coordinator.describe()
    assert d["state"] == "STABLE" and d["generation"] == 1 and list(d["members"]) == [good.member_id]


@pytest.mark.parametrize(
    "body, why",
    [
        (b"not json", "not UTF-8 JSON"),
        (b"[1]", "JSON object"),
        (b'{"group_id": "app"}', "missing field"),
        (b'{"group_id":"app","member_id":"","protocol":"X","user_data":"",'
         b'"session_timeout_ms":1,"rebalance_timeout_ms":1}', "protocol"),
        (b'{"group_id":"app","member_id":"","protocol":"EAGER","user_data":"!!",'
         b'"session_timeout_ms":1,"rebalance_timeout_ms":1}', "base64"),
        (b'{"group_id":"app","member_id":"","protocol":"EAGER","user_data":"",'
         b'"session_timeout_ms":"1","rebalance_timeout_ms":1}', "integer"),
        (b'{"group_id":"app","member_id":"","protocol":"EAGER","user_data":"",'
         b'"session_timeout_ms":1,"rebalance_timeout_ms":1,"x":1}', "unknown fields"),
    ],
)
def test_bad_requests_get_invalid_request(coordinator: Coordinator, body: bytes, why: str) -> None:
    raw = flight.FlightClient(coordinator.address)
    try:
        (result,) = list(raw.do_action(flight.Action("join", body), authenticated(coordinator)))
    finally:
        raw.close()
    resp = JoinResponse.from_bytes(result.body.to_pybytes())
    assert resp.error == GroupError.INVALID_REQUEST.value and why in resp.message


def test_other_group_is_refused(client: GroupClient) -> None:
    assert join(client, group="other").error == GroupError.INCONSISTENT_GROUP.value


def test_unknown_action_is_a_flight_error(coordinator: Coordinator) -> None:
    raw = flight.FlightClient(coordinator.address)
    with pytest.raises(flight.FlightError, match="unknown action"):
        list(raw.do_action(flight.Action("pickle.loads", b""), authenticated(coordinator)))
    raw.close()


def test_unreachable_coordinator_is_typed() -> None:
    cl = GroupClient("grpc://127.0.0.1:1", timeout_s=1)
    with pytest.raises(CoordinatorUnavailable):
        cl.call(DescribeRequest("app"), DescribeResponse)


def test_start_coordinator_from_kafka_properties() -> None:
    from streams_rt.coordinator.service import start_coordinator
    from streams_rt.protocol import TaskId

    c = start_coordinator(
        {"application.id": "props-app", "bootstrap.servers": "localhost:9092", "coordinator.host": "127.0.0.1",
         "scheduled.rebalance.max.delay.ms": "1000", "num.standby.replicas": "1", "upgrade.from": "2.3"},
        [TaskId(0, 0)],
    )
    try:
        assert c.address.startswith("grpc://127.0.0.1:") and c.describe()["state"] == "EMPTY"
        assert c.config.application_id == "props-app"
        assert c.describe()["protocol_policy"] == {"upgrade_from": "2.3", "override": None, "metadata_version_cap": 11}
    finally:
        c.close()


WHOLE_APPLICATION = {
    "application.id": "whole-app", "bootstrap.servers": "localhost:9092", "state.dir": "/var/lib/whole-app",
    "session.timeout.ms": 10_000, "processing.guarantee": "exactly_once_v2", "max.records.per.task.per.batch": 10,
    "consumer.max.poll.records": "5", "group.initial.rebalance.delay.ms": 7,
}


def test_start_coordinator_takes_the_whole_applications_properties_or_their_resolved_config() -> None:
    from streams_rt.config import resolve
    from streams_rt.coordinator.service import start_coordinator
    from streams_rt.protocol import TaskId

    for given in (WHOLE_APPLICATION, resolve(WHOLE_APPLICATION)):
        c = start_coordinator(given, [TaskId(0, 0)])
        try:
            assert (c.config.application_id, c.config.initial_rebalance_delay_ms) == ("whole-app", 7)
        finally:
            c.close()


def test_start_coordinator_refuses_an_unknown_key_naming_the_closest_one() -> None:
    from streams_rt.config import ConfigError
    from streams_rt.coordinator.service import start_coordinator
    from streams_rt.protocol import TaskId

    with pytest.raises(ConfigError) as caught:
        start_coordinator({**WHOLE_APPLICATION, "num.standby.replica": "1"}, [TaskId(0, 0)])
    assert str(caught.value) == "unknown configuration key 'num.standby.replica'; did you mean 'num.standby.replicas'?"


def test_heartbeat_long_poll_answers_when_a_rebalance_starts(client: GroupClient, coordinator: Coordinator) -> None:
    """A held heartbeat returns NONE when nothing happens, and REBALANCE_IN_PROGRESS when a round
    starts while it is held (a member learns of the round without waiting out its interval)."""
    a = join(client)
    client.call(SyncRequest("app", a.member_id, -1), SyncResponse)
    quiet = client.call(HeartbeatRequest("app", a.member_id, 1, wait_ms=50), HeartbeatResponse)
    assert quiet.error == GroupError.NONE.value
    held: list[HeartbeatResponse] = []
    other = GroupClient(coordinator.address, timeout_s=5, secret=coordinator.secret)
    t = threading.Thread(target=lambda: held.append(
        other.call(HeartbeatRequest("app", a.member_id, 1, wait_ms=4000), HeartbeatResponse, extra_timeout_s=4)))
    t.start()
    join(client)  # a second member: the group prepares a rebalance
    t.join(10)
    other.close()
    assert held and held[0].error == GroupError.REBALANCE_IN_PROGRESS.value


def test_set_protocol_without_a_policy_is_refused(client: GroupClient) -> None:
    resp = client.call(SetProtocolRequest("app", "EAGER"), SetProtocolResponse)
    assert resp.error == GroupError.INVALID_REQUEST.value and "toggle" in resp.message


def test_request_shutdown_is_refused_over_rpc_when_upgrade_from_cannot_carry_it() -> None:
    from streams_rt.coordinator.service import start_coordinator
    from streams_rt.protocol import TaskId

    c = start_coordinator({"application.id": "old-app", "bootstrap.servers": "localhost:9092", "upgrade.from": "1.1"},
                          [TaskId(0, 0)])
    client = GroupClient(c.address, secret=c.secret)
    try:
        resp = client.call(RequestShutdownRequest("old-app", "test"), RequestShutdownResponse)
        assert resp.error == GroupError.INVALID_REQUEST.value and "SHUTDOWN_REQUESTED" in resp.message
        assert c.describe()["generation"] == 0, "no round was started"
    finally:
        client.close()
        c.close()
