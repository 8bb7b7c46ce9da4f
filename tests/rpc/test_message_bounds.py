"""Request bounds, pure: any body gives a request or a typed INVALID_REQUEST whose message quotes at
most a short prefix of what it got; JSON depth is checked before parsing."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.rpc.errors import MAX_MESSAGE_CHARS, GroupError, GroupErrorException, abbreviate
from streams_rt.rpc.messages import (
    MAX_ID_LENGTH,
    MAX_JSON_DEPTH,
    MAX_MEMBER_ID_LENGTH,
    REQUEST_STRING_LIMITS,
    REQUESTS,
    HeartbeatRequest,
    JoinRequest,
    RequestShutdownRequest,
    nests_at_most,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:\n\u00e9'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\a'), inner, max_size=3),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


@given(json_values, st.integers(0, 6), st.booleans())
def test_nesting_check_agrees_with_the_parsed_depth(value: Any, limit: int, ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    assert nests_at_most(body, limit) == (depth(value) <= limit)


def test_json_nested_a_thousand_deep_is_a_typed_error() -> None:
    for body in (b"[" * 1000 + b"]" * 1000, b'{"group_id":' + b'{"a":' * 1000 + b"1" + b"}" * 1001):
        with pytest.raises(GroupErrorException) as e:
            HeartbeatRequest.from_bytes(body)
        assert e.value.error is GroupError.INVALID_REQUEST
        assert f"nested at most {MAX_JSON_DEPTH} deep" in e.value.message


def body(**fields: Any) -> bytes:
    base = {"group_id": "app", "member_id": "m", "generation": 1}
    return json.dumps({**base, **fields}).encode()


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"member_id": "x" * 50_000}, "'member_id' is 50000 characters"),
        ({"group_id": "g" * (MAX_ID_LENGTH + 1)}, "'group_id' is 250 characters"),
        ({"group_instance_id": "i" * (MAX_ID_LENGTH + 1)}, "'group_instance_id' is 250 characters"),
        ({"group_instance_id": "a b"}, "legal characters"),
        ({"group_instance_id": ".."}, "legal characters"),
        ({"group_instance_id": ""}, "legal characters"),
        ({"generation": 2**31}, "int32"),
        ({"wait_ms": -(2**31) - 1}, "int32"),
        ({"x" * 10_000: 1}, "unknown fields"),
    ],
)
def test_out_of_bounds_requests_are_refused_quoting_a_prefix(fields: dict[str, Any], why: str) -> None:
    with pytest.raises(GroupErrorException) as e:
        HeartbeatRequest.from_bytes(body(**fields))
    assert e.value.error is GroupError.INVALID_REQUEST and why in e.value.message
    assert len(e.value.message) < 300


def test_an_integer_past_pythons_digit_limit_is_a_typed_error() -> None:
    with pytest.raises(GroupErrorException) as e:
        HeartbeatRequest.from_bytes(b'{"group_id":"app","member_id":"m","generation":' + b"9" * 5000 + b"}")
    assert e.value.error is GroupError.INVALID_REQUEST and "not UTF-8 JSON" in e.value.message


def test_ids_at_the_limits_are_accepted() -> None:
    HeartbeatRequest.from_bytes(body(member_id="m" * MAX_MEMBER_ID_LENGTH, group_instance_id="a.B_9-" * 41))
    with pytest.raises(GroupErrorException):
        RequestShutdownRequest.from_bytes(json.dumps({"group_id": "app", "reason": "r" * 256}).encode())


def test_every_request_string_has_a_length_limit() -> None:
    for request_cls, _ in REQUESTS.values():
        for name, hint in typing.get_type_hints(request_cls).items():
            if hint in (str, str | None) and name != "ACTION":
                assert name in REQUEST_STRING_LIMITS, f"{request_cls.__name__}.{name} has no length limit"


@settings(max_examples=300)
@given(st.sampled_from(sorted(REQUESTS)),
       st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode())))
def test_any_body_is_a_request_or_a_typed_refusal(action: str, raw: bytes) -> None:
    request_cls = REQUESTS[action][0]
    try:
        request_cls.from_bytes(raw)
    except GroupErrorException as e:
        assert e.error is GroupError.INVALID_REQUEST and len(e.message) <= MAX_MESSAGE_CHARS


def test_a_join_whose_values_are_huge_is_refused_quoting_a_prefix() -> None:
    raw = json.dumps({"group_id": "app", "member_id": "", "protocol": "P" * 100_000, "user_data": "",
                      "session_timeout_ms": 1, "rebalance_timeout_ms": 1}).encode()
    with pytest.raises(GroupErrorException) as e:
        JoinRequest.from_bytes(raw)
    assert "'protocol' is 100000 characters" in e.value.message and len(e.value.message) < 300


def test_abbreviate_quotes_a_prefix_and_the_length() -> None:
    assert abbreviate("short") == "'short'"
    assert abbreviate("y" * 1000) == f"{'y' * 40!r}... (1000 characters)"
