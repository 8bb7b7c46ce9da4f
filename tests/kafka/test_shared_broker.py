"""A dev broker shared by several processes (`DevBroker.shared()`, what the examples use): the first
holder starts it through a keeper, the others reuse it, the first to finish leaves it to the rest, the
last takes it down, and a holder killed with SIGKILL leaves nothing behind. `dev-broker status` says
"starting" while a start is under way, and who shares a running broker."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from streams_rt.kafka.dev_broker import DevBroker
from tests.kafka.helpers import alive, cli, topics

pytestmark = pytest.mark.broker

HOLDER = """
import json, sys
from streams_rt.kafka.dev_broker import DevBroker
with DevBroker(sys.argv[1]).shared() as info:
    print(json.dumps({"pid": info.pid, "port": info.port, "reused": info.reused}), flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


class Holder:
    """A process that holds the broker of `directory` until told to let go."""

    def __init__(self, directory: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(30)
            assert self.proc.stderr is not None
            pytest.fail(f"the holder exited before holding the broker:\n{self.proc.stderr.read()}")
        self.broker: dict[str, Any] = json.loads(line)

    def let_go(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "released"
        assert self.proc.wait(90) == 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def keepers(directory: Path) -> list[int]:
    """The pids of the keeper processes of `directory`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"streams_rt.kafka.broker_keeper" in cmdline and str(directory).encode() in cmdline:
                found.append(int(entry.name))
    return found


def wait_until_gone(pids: list[int], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"still running after {timeout_s} s: {[p for p in pids if alive(p)]}"
        time.sleep(0.2)


def test_two_holders_share_one_broker_and_the_second_keeps_it_when_the_first_finishes(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    first = Holder(directory)
    second = None
    try:
        second = Holder(directory)
        assert (second.broker["pid"], second.broker["port"]) == (first.broker["pid"], first.broker["port"])
        assert (first.broker["reused"], second.broker["reused"]) == (False, True)
        status = cli("status", "--dir", directory)
        assert status.returncode == 0, status.stdout
        assert f"used by pid {', '.join(map(str, sorted([first.proc.pid, second.proc.pid])))}" in status.stdout

        first.let_go()  # the one that started it finishes first
        bootstrap = f"127.0.0.1:{second.broker['port']}"
        assert alive(first.broker["pid"])
        topics(bootstrap)  # answers a metadata request: still serving the second
        info = DevBroker(directory).status()
        assert info is not None and info.holders == (second.proc.pid,)

        keeper = keepers(directory)
        second.let_go()  # the last holder: the broker and its keeper are gone when it returns
        assert not alive(first.broker["pid"])
        wait_until_gone(keeper, 10)
        assert DevBroker(directory).status() is None
    finally:
        for holder in (first, second):
            if holder is not None and holder.proc.poll() is None:
                holder.kill()
        DevBroker(directory).stop()


def test_a_holder_killed_with_sigkill_leaves_no_broker_behind(tmp_path: Path) -> None:
    directory = tmp_path / "killed"
    holder = Holder(directory)
    keeper = keepers(directory)
    assert len(keeper) == 1
    holder.kill()
    wait_until_gone([holder.broker["pid"], *keeper])


def test_a_broker_started_by_hand_is_reused_and_left_running(tmp_path: Path) -> None:
    directory = tmp_path / "by-hand"
    started = cli("start", "--dir", directory)
    assert started.returncode == 0, started.stderr
    try:
        info = DevBroker(directory).status()
        assert info is not None
        holder = Holder(directory)
        assert holder.broker["reused"] and holder.broker["pid"] == info.pid
        holder.let_go()
        assert DevBroker(directory).status() == info  # still running: `dev-broker stop` is the user's
        assert not keepers(directory)
    finally:
        assert cli("stop", "--dir", directory).returncode == 0


def test_status_says_starting_while_a_start_is_under_way(tmp_path: Path) -> None:
    """Status during a start: "starting" (exit code 3), never advice to stop a broker that is about
    to come up."""
    directory = tmp_path / "starting"
    starter = subprocess.Popen([sys.executable, "-m", "streams_rt.cli", "dev-broker", "start", "--dir",
                                str(directory)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[tuple[int, str]] = []
    try:
        deadline = time.monotonic() + 120
        while not seen or seen[-1][0] != 0:
            assert time.monotonic() < deadline, seen
            status = cli("status", "--dir", directory)
            seen.append((status.returncode, (status.stdout + status.stderr).strip()))
        assert starter.wait(60) == 0
    finally:
        if starter.poll() is None:
            starter.kill()
        cli("stop", "--dir", directory)
    assert all(code in (0, 1, 3) for code, _ in seen), seen
    assert any(code == 3 and "is starting" in text for code, text in seen), seen
