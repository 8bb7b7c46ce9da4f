"""The restart request a host checks before it agrees to bounce, without services: what it
accepts, how it changes the host file, and each way it refuses (the host then keeps running)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from streams_rt.protocol import LATEST_SUPPORTED_VERSION
from streams_rt.tasks.restart import RESUME_VERSION_KEY, RestartRefused, RestartRequest, carry_over

CURRENT: dict[str, Any] = {
    "properties": {"application.id": "app", "bootstrap.servers": "127.0.0.1:9092", "upgrade.from": "2.3"},
    "coordinator": "grpc://127.0.0.1:1", "latest_supported_version": 10, "watch_pid": 7,
}


def test_properties_are_set_and_removed_and_the_version_cap_follows_the_request() -> None:
    request = RestartRequest.from_json(b'{"properties": {"upgrade.from": null, "num.standby.replicas": 1}}')
    config = request.host_config(CURRENT)
    assert config["properties"] == {"application.id": "app", "bootstrap.servers": "127.0.0.1:9092",
                                    "num.standby.replicas": 1}
    assert "latest_supported_version" not in config  # the new code speaks this release's latest
    assert config["watch_pid"] == 7 and CURRENT["properties"]["upgrade.from"] == "2.3"  # a copy
    capped = RestartRequest(latest_supported_version=9).host_config(CURRENT)
    assert capped["latest_supported_version"] == 9 and capped["properties"] == CURRENT["properties"]


def test_a_request_survives_its_json_form() -> None:
    request = RestartRequest({"upgrade.from": None}, sys.executable, {"X": "1"}, 10)
    assert RestartRequest.from_json(request.to_json()) == request
    assert RestartRequest.from_json(b"") == RestartRequest()


@pytest.mark.parametrize("body, reason", [
    (b"{not json", "not JSON"),
    (b'["properties"]', "an object with properties"),
    (b'{"properties": {}, "code": "x"}', "an object with properties"),
    (b'{"properties": ["a"]}', "properties must be an object"),
    (b'{"env": {"A": 1}}', "env must be an object of strings"),
    (b'{"python": 3}', "python must be a path"),
    (b'{"latest_supported_version": 0}', f"must be in [1, {LATEST_SUPPORTED_VERSION}]"),
    (b'{"latest_supported_version": "11"}', f"must be in [1, {LATEST_SUPPORTED_VERSION}]"),
])
def test_malformed_requests_are_refused_with_one_line(body: bytes, reason: str) -> None:
    with pytest.raises(RestartRefused, match=reason.replace("[", r"\[").replace("]", r"\]")):
        RestartRequest.from_json(body)


def test_settings_that_would_not_start_a_host_are_refused_before_it_stops() -> None:
    with pytest.raises(RestartRefused, match="num.standby.replicas"):
        RestartRequest({"num.standby.replicas": -1}).host_config(CURRENT)
    with pytest.raises(RestartRefused, match="no.such.key"):
        RestartRequest({"no.such.key": 1}).host_config(CURRENT)
    with pytest.raises(RestartRefused, match="not an executable file"):
        RestartRequest(python="/nonexistent/bin/python").host_config(CURRENT)


def test_a_restart_carries_over_the_version_spoken_and_the_query_port() -> None:
    """So that a static member comes back as it was: no round for a changed version or endpoint."""
    current = {"properties": {"application.id": "app", "bootstrap.servers": "b:1"}, "coordinator": "c"}
    carried = carry_over(current, 10, "127.0.0.1:41234")
    assert carried[RESUME_VERSION_KEY] == 10 and carried["properties"]["iq.port"] == 41234
    assert current["properties"] == {"application.id": "app", "bootstrap.servers": "b:1"}  # not changed in place


@pytest.mark.parametrize("fixed", [{"iq.port": 9000}, {"application.server": "h:9000"}])
def test_a_fixed_query_port_is_left_as_set(fixed: dict[str, object]) -> None:
    current = {"properties": {"application.id": "app", **fixed}}
    assert carry_over(current, 11, "127.0.0.1:41234")["properties"] == current["properties"]
    assert carry_over({"properties": {}}, 11, None)["properties"] == {}  # no query server


@pytest.mark.parametrize("value", ["app", None])
def test_a_restart_cannot_change_the_hosts_instance_id(value: str | None) -> None:
    """Set on one host without its name appended, it could fence another host; unset, the host would
    leave static membership behind its operator's back."""
    with pytest.raises(RestartRefused, match="cannot change group.instance.id"):
        RestartRequest(properties={"group.instance.id": value}).host_config(CURRENT)


def test_only_the_running_or_an_allowed_interpreter_may_be_restarted_into(tmp_path: Any) -> None:
    """The run's secret must not let its holder start a host from any program."""
    other = tmp_path / "bin" / "python"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    assert RestartRequest(python="/usr/bin/env").host_config(CURRENT, running="/usr/bin/env")  # the running one
    with pytest.raises(RestartRefused, match=f"{other} is not in host.restart.allowed.interpreters "
                                             r"\(empty: only the running interpreter\)"):
        RestartRequest(python=str(other)).host_config(CURRENT)
    allowed = {**CURRENT, "properties": {**CURRENT["properties"], "host.restart.allowed.interpreters": str(other)}}
    assert RestartRequest(python=str(other)).host_config(allowed)["properties"] == allowed["properties"]


def test_only_allowed_environment_variables_may_be_set() -> None:
    with pytest.raises(RestartRefused, match=r"environment variables LD_PRELOAD, PYTHONPATH are not in "
                                             r"host.restart.allowed.env \(empty\)"):
        RestartRequest(env={"PYTHONPATH": "/tmp/evil", "LD_PRELOAD": "/tmp/evil.so"}).host_config(CURRENT)
    allowed = {**CURRENT, "properties": {**CURRENT["properties"], "host.restart.allowed.env": "MY_FLAG,OTHER"}}
    assert RestartRequest(env={"MY_FLAG": "1"}).host_config(allowed)
    with pytest.raises(RestartRefused, match="PYTHONPATH are not in host.restart.allowed.env"):
        RestartRequest(env={"MY_FLAG": "1", "PYTHONPATH": "/x"}).host_config(allowed)


@pytest.mark.parametrize("key", ["host.restart.allowed.interpreters", "host.restart.allowed.env"])
def test_a_restart_cannot_widen_what_restarts_may_do(key: str) -> None:
    with pytest.raises(RestartRefused, match=f"cannot change {key}"):
        RestartRequest({key: "/bin/sh"}).host_config(CURRENT)
