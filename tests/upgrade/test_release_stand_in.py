"""The older-release stand-in (host file keys, the wrapper's environment variable, a restart that
drops it) and the runbook's block markers, with no services."""

from __future__ import annotations

import pytest

from streams_rt.protocol import LATEST_SUPPORTED_VERSION, RebalanceProtocol
from streams_rt.tasks.release_stand_in import ENVIRONMENT_VARIABLE, ReleaseStandIn, protocol_from_host_config
from streams_rt.tasks.restart import RestartRequest
from tests.upgrade.runbook import steps
from tests.upgrade.test_runbook import EXPECTED_STEPS, MANUAL

OLD = ReleaseStandIn(10, RebalanceProtocol.EAGER)


def test_the_environment_variable_round_trips_and_is_taken_once() -> None:
    environ = {**OLD.environment(), "OTHER": "x"}
    assert ReleaseStandIn.take_from_environment(environ) == OLD
    assert environ == {"OTHER": "x"}  # a later exec to another interpreter does not inherit it
    assert ReleaseStandIn.take_from_environment(environ) is None
    assert ReleaseStandIn.parse("9") == ReleaseStandIn(9, RebalanceProtocol.EAGER)
    assert ReleaseStandIn.parse("9:cooperative").rebalance_protocol is RebalanceProtocol.COOPERATIVE


@pytest.mark.parametrize("text", ["x", "10:LAZY", "0", f"{LATEST_SUPPORTED_VERSION + 1}"])
def test_a_bad_value_is_one_error_naming_the_variable(text: str) -> None:
    with pytest.raises(ValueError, match=ENVIRONMENT_VARIABLE):
        ReleaseStandIn.parse(text)


def test_a_restart_drops_the_stand_in_unless_it_asks_for_a_version() -> None:
    current = {"properties": {"application.id": "a", "bootstrap.servers": "b:1"}, **OLD.host_config()}
    assert protocol_from_host_config(current) is RebalanceProtocol.EAGER
    upgraded = RestartRequest(properties={"upgrade.from": "2.3"}).host_config(current)
    assert "latest_supported_version" not in upgraded and protocol_from_host_config(upgraded) is None
    capped = RestartRequest(latest_supported_version=9).host_config(current)
    assert capped["latest_supported_version"] == 9 and protocol_from_host_config(capped) is None


def test_the_runbook_markers_are_read_and_a_foreign_command_is_refused() -> None:
    text = ('```bash step=a each=host expect="x y" expect=z\nstreams-rt status -a "$APP"\n```\n'
            "```bash step=b manual\nstreams-rt protocol default -a $APP\n```\n")
    a, b = steps(text)
    assert (a.name, a.each_host, a.expect, a.manual) == ("a", True, ("x y", "z"), False)
    assert a.argv({"APP": "app-1"}) == [["streams-rt", "status", "-a", "app-1"]]
    assert b.manual and not b.each_host
    with pytest.raises(KeyError):
        a.argv({})
    with pytest.raises(ValueError, match="streams-rt command"):
        steps("```bash step=c\nrm -rf /tmp/x\n```\n")


def test_the_runbook_names_every_step_the_runbook_test_knows() -> None:
    found = steps()
    assert [s.name for s in found] == EXPECTED_STEPS
    assert {s.name for s in found if s.manual} == MANUAL
