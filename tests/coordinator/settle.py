"""Waiting for a real application's group to settle, as its coordinator's status object says."""

from __future__ import annotations

import time
from typing import Any

from streams_rt.runtime.local import LocalApplication


def settled(status: dict[str, Any], members: int) -> bool:
    """Stable with `members` hosts, every task running, no warm-up left."""
    return (status["state"] == "STABLE" and len(status["hosts"]) == members
            and all(t["state"] == "RUNNING" for t in status["tasks"]) and not any(h["warmup"] for h in status["hosts"]))


def wait_until_settled(app: LocalApplication, members: int, timeout_s: float = 90.0) -> dict[str, Any]:
    """The settled status; AssertionError with the last one after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not settled(status := app.coordinator.status(), members):
        assert time.monotonic() < deadline, f"not settled with {members} hosts within {timeout_s} s: {status}"
        time.sleep(0.1)
    return status
