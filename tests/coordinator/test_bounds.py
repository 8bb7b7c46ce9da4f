"""One member cannot stop everyone: the Hardening findings replayed against a live coordinator with
real host processes. Each bad join gets a typed error naming its field (quoting at most a prefix,
never a traceback), the hosts never notice, and later rounds still go on."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pyarrow.flight as flight

from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.coordinator.streams_round import StreamsRoundPlanner
from streams_rt.coordinator.user_data import (
    AssignmentContent,
    DecodedSubscription,
    MemberWriter,
    RoundContent,
    StreamsUserDataCodec,
)
from streams_rt.protocol import TaskId
from streams_rt.protocol.subscription import SubscriptionInfo
from streams_rt.rpc.client import GroupClient
from streams_rt.rpc.errors import MAX_MESSAGE_CHARS, GroupError
from streams_rt.rpc.messages import JoinRequest, JoinResponse
from tests.coordinator.harness import (
    TASKS,
    TEST_SETTINGS,
    HostFactory,
    assert_single_owners,
    authenticated,
    settled,
    wait_until,
)

GOOD_SUB = SubscriptionInfo.for_version(11, uuid.uuid4(), user_endpoint="good:8080").encode()


def join_body(**fields: object) -> bytes:
    base: dict[str, object] = {
        "group_id": "app", "member_id": "", "protocol": "COOPERATIVE",
        "user_data": base64.b64encode(GOOD_SUB).decode(), "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
    }
    return json.dumps({**base, **fields}).encode()


def endpoint_sub(endpoint: str) -> str:
    data = SubscriptionInfo.for_version(11, uuid.uuid4(), user_endpoint=endpoint).encode()
    return base64.b64encode(data).decode()


# (what the finding did, the join body, the error, what its message must name)
HOSTILE_JOINS: list[tuple[str, bytes, GroupError, str]] = [
    ("endpoint port above 2^31", join_body(user_data=endpoint_sub("evil:2147483653")), GroupError.ASSIGNOR_ERROR,
     "user_endpoint port"),
    ("endpoint port above 65535", join_body(user_data=endpoint_sub("evil:65536")), GroupError.ASSIGNOR_ERROR,
     "user_endpoint port"),
    ("endpoint host over 65,535 bytes", join_body(user_data=endpoint_sub("h" * 70_000 + ":80")),
     GroupError.ASSIGNOR_ERROR, "user_endpoint host is at least 70000 bytes"),
    ("endpoint that is not host:port", join_body(user_data=endpoint_sub("no-port")), GroupError.ASSIGNOR_ERROR,
     "user_endpoint is not host:port"),
    ("session timeout of 10^12 ms", join_body(session_timeout_ms=10**12), GroupError.INVALID_REQUEST,
     "'session_timeout_ms' is out of the int32 range"),
    ("session timeout above group.max.session.timeout.ms", join_body(session_timeout_ms=2**31 - 1),
     GroupError.INVALID_REQUEST, "group.min/max.session.timeout.ms"),
    ("session timeout below group.min.session.timeout.ms", join_body(session_timeout_ms=1), GroupError.INVALID_REQUEST,
     "group.min/max.session.timeout.ms"),
    ("rebalance timeout above its cap", join_body(rebalance_timeout_ms=2**31 - 1), GroupError.INVALID_REQUEST,
     "group.max.rebalance.timeout.ms"),
    ("subscription above group.max.subscription.bytes",
     join_body(user_data=base64.b64encode(b"\0" * (2**20 + 1)).decode()),
     GroupError.INVALID_REQUEST, "group.max.subscription.bytes"),
    ("request above rpc.request.max.bytes", join_body(user_data=base64.b64encode(b"\0" * 4 * 2**20).decode()),
     GroupError.INVALID_REQUEST, "rpc.request.max.bytes"),
    ("50 MB member id", join_body(member_id="m" * 50_000_000), GroupError.INVALID_REQUEST, "rpc.request.max.bytes"),
    ("3 MB member id", join_body(member_id="m" * 3_000_000), GroupError.INVALID_REQUEST,
     "'member_id' is 3000000 characters"),
    ("JSON nested 1,000 deep", b'{"group_id":' + b"[" * 1000 + b"]" * 1000 + b"}", GroupError.INVALID_REQUEST,
     "nested at most"),
]


def test_hostile_joins_get_typed_errors_and_the_group_goes_on(coordinator: Coordinator, hosts: HostFactory) -> None:
    live = [hosts.start(n) for n in ("a", "b")]
    before = settled(coordinator, live)
    raw = flight.FlightClient(coordinator.address)
    try:
        for what, body, error, named in HOSTILE_JOINS:
            (result,) = list(raw.do_action(flight.Action("join", body), authenticated(coordinator)))
            resp = JoinResponse.from_bytes(result.body.to_pybytes())
            assert (resp.error, named in resp.message) == (error.value, True), f"{what}: {resp.message}"
            assert len(resp.message) <= MAX_MESSAGE_CHARS + 30 and "Traceback" not in resp.message, what
    finally:
        raw.close()
    d = coordinator.describe()
    assert (d["state"], d["generation"], len(d["members"])) == ("STABLE", before["generation"], 2)
    live.append(hosts.start("c"))  # later rounds are not blocked by anything the hostile joins did
    after = settled(coordinator, live)
    assert after["generation"] > before["generation"]
    assert not [e for h in live for e in h.events() if e["event"] in ("failed", "lost")]
    assert_single_owners(live)


class FailsOnceFor:
    """A codec that cannot write the first assignment holding `task` (an unforeseen encoding bug)."""

    def __init__(self, task: TaskId) -> None:
        self._inner = StreamsUserDataCodec()
        self.latest_supported_version = self._inner.latest_supported_version
        self.decode_subscription = self._inner.decode_subscription
        self._task = task
        self.armed = False  # set once the group has settled: a later join would supersede the failing round
        self.failed = False

    def assignment_writer(self, version: int, commonly_supported: int, shared: RoundContent) -> MemberWriter:
        write = self._inner.assignment_writer(version, commonly_supported, shared)

        def write_or_fail(content: AssignmentContent) -> bytes:
            if self.armed and not self.failed and self._task in content.active_tasks:
                self.failed = True
                raise OverflowError("cannot write this one")
            return write(content)

        return write_or_fail


def test_an_assignment_that_cannot_be_written_fails_only_its_member(tmp_path: Path) -> None:
    codec = FailsOnceFor(TaskId(1, 5))
    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                              StreamsRoundPlanner(TASKS, codec=codec), settings=TEST_SETTINGS)
    hosts = HostFactory(coordinator, tmp_path)
    try:
        live = [hosts.start(n) for n in ("a", "b", "c")]
        settled(coordinator, live)
        codec.armed = True  # the round a fourth member's join starts is the one that fails: nothing supersedes it
        live.append(hosts.start("d"))
        wait_until(lambda: codec.failed and [h for h in live if h.proc.poll() is not None], 60, "one host to fail")
        (failed,) = [h for h in live if h.proc.poll() is not None]
        assert failed.proc.returncode == 2
        (event,) = failed.events("failed")
        assert event["assignor_error"] == 3 and "cannot write this member's assignment" in event["message"]
        rest = [h for h in live if h is not failed]
        after = settled(coordinator, rest)  # the others get every task, the failed one's too
        assert len(after["members"]) == 3
        assert not [e for h in rest for e in h.events() if e["event"] in ("failed", "lost")]
        assert_single_owners(rest)
    finally:
        hosts.cleanup()
        coordinator.close()


def test_an_unknown_action_quotes_only_a_prefix_of_its_name(coordinator: Coordinator) -> None:
    raw = flight.FlightClient(coordinator.address)
    try:
        list(raw.do_action(flight.Action("x" * 100_000, b""), authenticated(coordinator)))
        raise AssertionError("an unknown action was answered")
    except flight.FlightServerError as e:
        assert "unknown action" in str(e) and "100000 characters" in str(e) and len(str(e)) < 400
    finally:
        raw.close()


def test_an_unexpected_failure_is_a_typed_error_without_a_traceback(tmp_path: Path) -> None:
    class BrokenDecoder(StreamsRoundPlanner):
        def decode_subscription(self, data: bytes) -> DecodedSubscription:
            raise KeyError("a bug")

    coordinator = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0),
                              BrokenDecoder(TASKS), settings=TEST_SETTINGS)
    client = GroupClient(coordinator.address, secret=coordinator.secret)
    try:
        resp = client.call(JoinRequest("app", "", "COOPERATIVE", GOOD_SUB, 10_000, 10_000), JoinResponse)
        assert resp.error == GroupError.UNKNOWN_SERVER_ERROR.value and "incident" in resp.message
        assert "Traceback" not in resp.message and "a bug" not in resp.message
    finally:
        client.close()
        coordinator.close()
