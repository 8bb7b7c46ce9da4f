"""The rebalance protocol crosses the wire as its name and is the RebalanceProtocol enum on both
sides: the typed accessors, and what each message refuses."""

from __future__ import annotations

import pytest

from streams_rt.protocol import RebalanceProtocol
from streams_rt.rpc.errors import GroupError, GroupErrorException
from streams_rt.rpc.messages import PROTOCOLS, JoinRequest, SetProtocolRequest, SyncResponse


def test_the_wire_names_are_the_enums_names() -> None:
    assert PROTOCOLS == tuple(protocol.name for protocol in RebalanceProtocol)


@pytest.mark.parametrize("protocol", list(RebalanceProtocol))
def test_each_message_gives_the_enum_back(protocol: RebalanceProtocol) -> None:
    join = JoinRequest("app", "", protocol.name, b"", 10_000, 10_000)
    assert JoinRequest.from_bytes(join.to_bytes()).rebalance_protocol is protocol
    sync = SyncResponse(ready=True, generation=1, protocol=protocol.name)
    assert SyncResponse.from_bytes(sync.to_bytes()).rebalance_protocol is protocol
    request = SetProtocolRequest("app", protocol.name)
    assert SetProtocolRequest.from_bytes(request.to_bytes()).rebalance_protocol is protocol
    assert SetProtocolRequest.from_bytes(SetProtocolRequest("app", "").to_bytes()).rebalance_protocol is None


def test_a_ready_assignment_must_name_a_protocol() -> None:
    with pytest.raises(GroupErrorException) as caught:
        SyncResponse.from_bytes(SyncResponse(ready=True, generation=1, protocol="cooperative").to_bytes())
    assert caught.value.error is GroupError.INVALID_REQUEST and "protocol must be one of" in caught.value.message


def test_a_failed_round_or_a_pending_one_carries_no_protocol() -> None:
    failed = SyncResponse(ready=True, generation=1, protocol="", error=GroupError.ASSIGNOR_ERROR.value,
                          assignor_error=3)
    assert SyncResponse.from_bytes(failed.to_bytes()) == failed
    pending = SyncResponse(ready=False, protocol="")
    assert SyncResponse.from_bytes(pending.to_bytes()) == pending


def test_a_join_with_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(GroupErrorException, match="protocol must be one of"):
        JoinRequest.from_bytes(JoinRequest("app", "", "eager", b"", 10_000, 10_000).to_bytes())
