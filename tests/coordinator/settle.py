"""Waiting for a real application's group to reach a state, as its coordinator's status object says."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from streams_rt.runtime.local import LocalApplication


def wait_until(app: LocalApplication, condition: Callable[[dict[str, Any]], bool],
               timeout_s: float = 90.0) -> dict[str, Any]:
    """The first status that meets `condition`; AssertionError with the last one after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition(status := app.coordinator.status()):
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {status}"
        time.sleep(0.1)
    return status


def wait_until_settled(app: LocalApplication, members: int, timeout_s: float = 90.0) -> dict[str, Any]:
    """Stable with `members` hosts, every task running, no warm-up left."""
    return wait_until(app, lambda s: s["state"] == "STABLE" and len(s["hosts"]) == members
                      and all(t["state"] == "RUNNING" for t in s["tasks"])
                      and not any(h["warmup"] for h in s["hosts"]), timeout_s)
