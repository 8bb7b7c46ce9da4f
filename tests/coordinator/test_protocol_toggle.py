"""Integration, hosts as processes: KIP-125's dynamic toggle. An operator switches a running group
from COOPERATIVE to EAGER (over the Flight action) and back (through the Coordinator); each switch
starts a round, and no task ever has two holders."""

from __future__ import annotations

from typing import Any

import pyarrow.flight as flight

from streams_rt.coordinator.service import Coordinator
from streams_rt.protocol import RebalanceProtocol
from streams_rt.rpc.client import GroupClient
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import SetProtocolRequest, SetProtocolResponse
from tests.coordinator.harness import Host, HostFactory, authenticated, ownership_overlaps, settled_now, wait_until


def settled_as(coordinator: Coordinator, hosts: list[Host], protocol: str) -> dict[str, Any]:
    """Settled, with the group on `protocol` and every host behaving accordingly."""
    eager = protocol == "EAGER"

    def check() -> dict[str, Any] | None:
        d = settled_now(coordinator, hosts)
        ok = d and d["protocol"] == protocol and all(s["eager"] is eager for s in d["hosts"].values())
        return d if ok else None

    return wait_until(check, 60, f"hosts {[h.name for h in hosts]} to settle on {protocol}")


def revoked_since(h: Host, mark: int) -> set[str]:
    return {t for e in h.events()[mark:] if e["event"] == "revoked" for t in e["tasks"]}


def test_operator_toggles_between_cooperative_and_eager(coordinator: Coordinator, hosts: HostFactory) -> None:
    live = [hosts.start(n) for n in ("a", "b", "c")]
    before = settled_as(coordinator, live, "COOPERATIVE")
    client = GroupClient(coordinator.address, secret=coordinator.secret)
    try:
        assert client.call(SetProtocolRequest("app", "EAGER"), SetProtocolResponse).error == GroupError.NONE.value
        eager = settled_as(coordinator, live, "EAGER")
        assert eager["generation"] > before["generation"]
        assert coordinator.describe()["protocol_policy"]["override"] == "EAGER"

        marks = {h.name: len(h.events()) for h in live}
        live.append(hosts.start("d"))
        settled_as(coordinator, live, "EAGER")
        for h in live[:3]:  # EAGER: everything is revoked before the round, not just what moved
            assert revoked_since(h, marks[h.name]) == set(eager["hosts"][h.name]["active"])

        coordinator.set_protocol(RebalanceProtocol.COOPERATIVE)
        coop = settled_as(coordinator, live, "COOPERATIVE")
        marks = {h.name: len(h.events()) for h in live}
        live.append(hosts.start("e"))
        final = settled_as(coordinator, live, "COOPERATIVE")
        for h in live[:4]:  # COOPERATIVE again: exactly what moved away is revoked, nothing it kept
            moved = set(coop["hosts"][h.name]["active"]) - set(final["hosts"][h.name]["active"])
            assert revoked_since(h, marks[h.name]) == moved, h.name

        raw = flight.FlightClient(coordinator.address)
        body = b'{"group_id":"app","protocol":"SOMETIMES"}'
        (result,) = raw.do_action(flight.Action("set_protocol", body), authenticated(coordinator))
        assert SetProtocolResponse.from_bytes(result.body.to_pybytes()).error == GroupError.INVALID_REQUEST.value
        raw.close()
    finally:
        client.close()
    assert not [e for h in hosts.hosts for e in h.events("lost")]
    assert not ownership_overlaps(hosts.hosts)
