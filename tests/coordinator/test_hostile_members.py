"""Hypothesis against a live coordinator over real Flight: well-behaved members join one round
(held open at the planner's gate until everyone has joined, each join superseding it) together with
generated members whose requests and subscriptions carry hostile values (decodable
subscriptions with extreme endpoints, tasks, offset sums, tags, versions; extreme timeouts, capacities,
ids). Whatever they send, every well-behaved member's round succeeds, every task has one owner, and
every answer to a hostile member is a typed error or a normal answer."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow.flight as flight
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams_rt.coordinator.service import Coordinator, CoordinatorConfig
from streams_rt.protocol import LATEST_SUPPORTED_VERSION, AssignorError, TaskId, decode_assignment
from streams_rt.protocol.subscription import SubscriptionInfo
from streams_rt.rpc.client import GroupClient
from streams_rt.rpc.errors import MAX_MESSAGE_CHARS, GroupError
from streams_rt.rpc.messages import REQUESTS, JoinRequest, JoinResponse, Response, SyncRequest, SyncResponse
from tests.coordinator.harness import TASKS, TEST_SETTINGS, GatedPlanner, authenticated

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
TYPED = set(GroupError) - {GroupError.UNKNOWN_SERVER_ERROR}  # that one means the coordinator has a bug


def edge_ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from([lo, lo + 1, -1, 0, 1, hi - 1, hi]), st.integers(lo, hi))


def edge_text(edges: list[str], max_size: int = 10) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(edges), st.text(max_size=max_size))


# Endpoints: most are writable (some only just: the longest host, the extreme ports), some are not.
writable_endpoints = st.builds(
    lambda host, port: f"{host}:{port}",
    st.sampled_from(["h", "::1", "[::1]", "h:1", "\0", "é" * 32_767, "x" * 65_535, "主机"])
    | st.text(min_size=1, max_size=10),
    st.sampled_from([1, 65_535]) | st.integers(1, 65_535),
)
unwritable_endpoints = edge_text(["h:", ":1", "h:0", "h:65536", "h:-1", "h:+1", "h: 1", "h:1_0", "h:2147483653",
                                  "h:" + "9" * 40, "x" * 65_536 + ":1", "é" * 32_768 + ":1", "no-port"]).filter(bool)
endpoints = st.one_of(st.none(), writable_endpoints, writable_endpoints, unwritable_endpoints)
tasks = st.one_of(
    st.sampled_from(sorted(TASKS)),
    st.builds(lambda s, p: TaskId(s, p), edge_ints(*INT32), edge_ints(*INT32)),
    st.builds(lambda s, p, name: TaskId(s, p, name), st.integers(0, 1), st.integers(0, 5),
              st.text(min_size=1, max_size=5)),
)
offset_sums = st.one_of(st.sampled_from([-2, -3, 0, 10_000]), edge_ints(*INT64))


@st.composite
def hostile_subscriptions(draw: st.DrawFn, process_ids: list[uuid.UUID]) -> bytes:
    """Subscriptions that decode, with extreme values in every field."""
    version = draw(st.integers(1, LATEST_SUPPORTED_VERSION))
    if draw(st.integers(0, 9)) == 0:  # a "future" member: version probing
        future = draw(st.integers(LATEST_SUPPORTED_VERSION + 1, INT32[1]))
        latest = draw(st.integers(future, INT32[1]))
        return future.to_bytes(4, "big") + latest.to_bytes(4, "big") + draw(st.binary(max_size=20))
    sums = draw(st.dictionaries(tasks, offset_sums, max_size=8))
    if version < 10:
        sums = {t: s for t, s in sums.items() if t.topology_name is None}
    info = SubscriptionInfo.for_version(
        version,
        draw(st.one_of(st.sampled_from(process_ids), st.uuids())),  # may reuse a well-behaved member's
        latest_supported_version=draw(st.integers(version, INT32[1])),
        user_endpoint=draw(endpoints) if version >= 2 else None,
        task_offset_sums=sums,
        unique_field=draw(st.integers(-128, 127)),
        error_code=draw(st.sampled_from(list(AssignorError))),
        client_tags=draw(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3)),
    )
    return info.encode()


# Extreme values the coordinator admits (TEST_SETTINGS' bounds) ...
ADMISSIBLE: dict[str, st.SearchStrategy[object]] = {
    "protocol": st.sampled_from(["COOPERATIVE", "EAGER"]),
    "session_timeout_ms": st.sampled_from([100, 10_000, 1_800_000]) | st.integers(100, 1_800_000),
    "rebalance_timeout_ms": st.sampled_from([1, 10_000, 1_800_000]) | st.integers(1, 1_800_000),
    "capacity": st.sampled_from([1, 4, INT32[1]]) | st.integers(1, INT32[1]),
    "generation": edge_ints(*INT32),
    "revoked_all": st.booleans(),
    "group_instance_id": st.sampled_from([None, None, "good-a", "h1", "i" * 249]),
}
# ... and values it refuses; a join carries at most one.
INADMISSIBLE: dict[str, st.SearchStrategy[object]] = {
    "group_id": edge_text(["other", "", "a" * 300]),
    "member_id": edge_text(["not-a-member", "m" * 400]),
    "protocol": edge_text(["cooperative", ""]),
    "session_timeout_ms": st.sampled_from([0, 99, 1_800_001, INT32[1], INT64[1], -1]),
    "rebalance_timeout_ms": st.sampled_from([0, 1_800_001, INT32[1], -1]),
    "capacity": st.sampled_from([0, -1, INT32[1] + 1]),
    "generation": st.sampled_from([INT32[1] + 1, INT64[0]]),
    "group_instance_id": edge_text(["", "a b", ".", "i" * 250]),
}


@st.composite
def hostile_joins(draw: st.DrawFn, process_ids: list[uuid.UUID]) -> bytes:
    fields: dict[str, object] = {"group_id": "app", "member_id": ""}
    fields.update({name: draw(values) for name, values in ADMISSIBLE.items()})
    fields["user_data"] = base64.b64encode(draw(hostile_subscriptions(process_ids))).decode()
    if draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(sorted(INADMISSIBLE)))
        fields[name] = draw(INADMISSIBLE[name])
    return json.dumps(fields).encode()


@dataclass
class GoodMember:
    client: GroupClient
    process_id: uuid.UUID
    member_id: str = ""

    def join(self, instance_id: str | None) -> None:
        user_data = SubscriptionInfo.for_version(11, self.process_id, user_endpoint="good:8080").encode()
        request = JoinRequest("app", "", "COOPERATIVE", user_data, 10_000, 10_000, group_instance_id=instance_id)
        resp = self.client.call(request, JoinResponse)
        resp.raise_for_error()
        self.member_id = resp.member_id


def answer(raw: flight.FlightClient, coordinator: Coordinator, action: str, body: bytes) -> Response:
    """The coordinator's answer, checked to be typed and short."""
    (result,) = list(raw.do_action(flight.Action(action, body), authenticated(coordinator)))
    resp = REQUESTS[action][1].from_bytes(result.body.to_pybytes())
    assert GroupError(resp.error) in TYPED, resp.message
    assert len(resp.message) <= MAX_MESSAGE_CHARS + 30 and "Traceback" not in resp.message
    return resp


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[uuid.UUID], list[bytes], list[int]]:
    good = [uuid.uuid4(), uuid.uuid4()]
    joins = draw(st.lists(hostile_joins(good), min_size=1, max_size=4))
    order = draw(st.permutations(range(len(good) + len(joins))))
    return good, joins, order


def coordinators() -> Iterator[tuple[Coordinator, GatedPlanner]]:
    planner = GatedPlanner()
    c = Coordinator(CoordinatorConfig("app", initial_rebalance_delay_ms=0), planner, settings=TEST_SETTINGS)
    try:
        yield c, planner
    finally:
        planner.gate.set()
        c.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios(), st.lists(st.tuples(st.integers(0, 3), edge_ints(*INT32)), max_size=4))
def test_no_round_fails_for_a_well_behaved_member(
    scenario: tuple[list[uuid.UUID], list[bytes], list[int]], hostile_syncs: list[tuple[int, int]]
) -> None:
    good_pids, joins, order = scenario
    for coordinator, planner in coordinators():
        raw = flight.FlightClient(coordinator.address)
        good = [GoodMember(GroupClient(coordinator.address, secret=coordinator.secret, timeout_s=10), pid)
                for pid in good_pids]
        try:
            admitted: list[str] = []
            planner.gate.clear()  # one round for everyone: each join supersedes the one held at the gate
            for i in order:  # well-behaved and hostile joins interleaved, all in the first round
                if i < len(good):
                    good[i].join("good-a" if i == 0 else None)
                else:
                    resp = answer(raw, coordinator, "join", joins[i - len(good)])
                    if isinstance(resp, JoinResponse) and resp.error == GroupError.NONE.value:
                        admitted.append(resp.member_id)
            planner.gate.set()
            for g in good:
                if g.member_id not in coordinator.describe()["members"]:
                    continue  # a hostile static member took its instance id: it was fenced, as KIP-345 says
                s = g.client.call(SyncRequest("app", g.member_id, -1, wait_ms=5000), SyncResponse, extra_timeout_s=5)
                assert s.error == GroupError.NONE.value and s.ready, s.message
                assert decode_assignment(s.user_data).error_code in (AssignorError.NONE, AssignorError.VERSION_PROBING)
            d = coordinator.describe()
            owners = [t for m in d["members"].values() for t in m.get("active", [])]
            assert len(owners) == len(set(owners)), "a task with two owners"
            assert d["metrics"]["failed-rebalance-total"] == 0
            for who, generation in hostile_syncs:
                member_id = admitted[who] if who < len(admitted) else "not-a-member"
                answer(raw, coordinator, "sync", SyncRequest("app", member_id, generation, wait_ms=0).to_bytes())
        finally:
            for g in good:
                g.client.close()
            raw.close()
