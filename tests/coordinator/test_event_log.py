"""The coordinator's event log: one line per event saying what happened and why (a member joined or
left, a rebalance started and ended with what moved, a member fenced), with member host processes;
and the driver's levels from STREAMS_RT_LOG_LEVEL."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from streams_rt.coordinator.history import short_member_id
from streams_rt.coordinator.service import Coordinator, start_coordinator
from streams_rt.log_levels import LOG_LEVEL_ENV, apply_log_levels, parse_levels
from streams_rt.protocol import TaskId
from streams_rt.rpc.client import GroupClient
from streams_rt.rpc.errors import GroupError
from streams_rt.rpc.messages import HeartbeatRequest, HeartbeatResponse
from tests.coordinator.harness import HostFactory, converged, wait_until

APP = {"application.id": "logs", "bootstrap.servers": "localhost:9092"}
CONVERGE_S = 60


def test_levels_parse_as_a_default_and_per_logger_levels() -> None:
    assert parse_levels("info") == {"streams_rt": logging.INFO}
    assert parse_levels("WARNING, streams_rt.coordinator=DEBUG") == {
        "streams_rt": logging.WARNING, "streams_rt.coordinator": logging.DEBUG}
    with pytest.raises(ValueError, match=r"^STREAMS_RT_LOG_LEVEL: unknown level 'LOUD' in 'loud' \(one of DEBUG"):
        parse_levels("loud")
    with pytest.raises(ValueError, match="'pyspark' is not a streams_rt logger"):
        parse_levels("pyspark=INFO")


@pytest.fixture
def restored_levels() -> Iterator[None]:
    names = ("streams_rt", "streams_rt.coordinator")
    before = {name: logging.getLogger(name).level for name in names}
    handlers = list(logging.getLogger("streams_rt").handlers)
    yield
    for name, level in before.items():
        logging.getLogger(name).setLevel(level)
    logging.getLogger("streams_rt").handlers = handlers


def test_the_environment_sets_the_levels(restored_levels: None) -> None:
    apply_log_levels({LOG_LEVEL_ENV: "ERROR,streams_rt.coordinator=DEBUG"})
    assert logging.getLogger("streams_rt").level == logging.ERROR
    assert logging.getLogger("streams_rt.coordinator.group").getEffectiveLevel() == logging.DEBUG
    apply_log_levels({})  # unset: nothing changes
    assert logging.getLogger("streams_rt").level == logging.ERROR


def test_a_bad_level_stops_the_coordinator_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOG_LEVEL_ENV, "chatty")
    with pytest.raises(ValueError, match="STREAMS_RT_LOG_LEVEL: unknown level 'CHATTY'"):
        start_coordinator(APP, [TaskId(0, 0)])


def test_a_driver_without_logging_set_up_writes_streams_rt_lines_to_stderr() -> None:
    script = ("from streams_rt.coordinator.service import start_coordinator; from streams_rt.protocol import TaskId;"
              f"start_coordinator({APP!r}, [TaskId(0, 0)], ).close()")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", LOG_LEVEL_ENV: "INFO"})
    assert result.returncode == 0, result.stderr
    assert re.search(r"driver\[\d+\] INFO streams_rt\.coordinator\.service: coordinator for logs listening on "
                     r"grpc://127\.0\.0\.1:\d+; status page and /metrics on http://127\.0\.0\.1:\d+", result.stderr)
    quiet = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin", LOG_LEVEL_ENV: "WARNING"})
    assert quiet.returncode == 0 and "listening" not in quiet.stderr


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("streams_rt.coordinator")]


def test_one_line_per_event_with_its_reason(coordinator: Coordinator, hosts: HostFactory,
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streams_rt.coordinator")
    hosts.start("a")
    wait_until(lambda: converged(coordinator, 1), CONVERGE_S, "one host to converge")
    b = hosts.start("b")
    wait_until(lambda: converged(coordinator, 2), CONVERGE_S, "two hosts to converge")
    (joined_b,) = [m for m in messages(caplog) if re.fullmatch(r"group app: member member-\S+ joined \(COOPERATIVE, "
                                                                r"capacity 1\); 2 members now", m)]
    member_b = joined_b.split()[3]
    assert f"group app: preparing rebalance after generation 1: new member {member_b} joined" in messages(caplog)
    done = [m for m in messages(caplog) if re.match(r"group app: generation \d+ formed ", m)]
    short_b = short_member_id(member_b)
    # Cooperative: the round the join started revokes, the follow-up it scheduled hands over.
    assert any(f"(new member {member_b} joined); moved: " in m and "active member-" in m and "->none" in m
               for m in done)
    assert any(f"active none->{short_b}" in m for m in done)
    assert done and all(re.fullmatch(r"group app: generation \d+ formed \(COOPERATIVE, \d members\) \d+ ms after "
                                     r"its round started \(.+\); (moved: .+|nothing moved)", m) for m in done)

    generation = coordinator.generation
    assert b.stop() == 0
    wait_until(lambda: converged(coordinator, 1), CONVERGE_S, "host b gone")
    assert any(re.fullmatch(rf"group app: member {member_b} removed: left the group", m) for m in messages(caplog))
    assert any(m.startswith(f"group app: preparing rebalance after generation {generation}: member {member_b} left")
               for m in messages(caplog))

    with GroupClient(coordinator.address, secret=coordinator.secret) as client:
        (member_a,) = coordinator.describe()["members"]
        stale = client.call(HeartbeatRequest("app", member_a, generation - 1), HeartbeatResponse)
        gone = client.call(HeartbeatRequest("app", f"member-{uuid.uuid4()}", 0), HeartbeatResponse)
    assert (stale.error, gone.error) == (GroupError.ILLEGAL_GENERATION.value, GroupError.UNKNOWN_MEMBER_ID.value)
    assert f"group app: heartbeat of member {member_a} refused with ILLEGAL_GENERATION: generation " \
           f"{generation - 1} is stale: the group is at generation {coordinator.generation}" in messages(caplog)
    assert any(m.startswith("group app: heartbeat of member member-") and "refused with UNKNOWN_MEMBER_ID" in m
               for m in messages(caplog))
    assert all("\n" not in m for m in messages(caplog))
