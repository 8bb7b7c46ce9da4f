"""Fault points for fault tests: `STREAMS_RT_FAULTS=before_commit:1_0,after_commit:*` makes a host
kill itself with SIGKILL when a task reaches that step, exactly as `kill -9` would at that moment;
`stall_on_close:<task>` makes the task's close hang for good, as a stuck disk or broker call would;
`hold_standby:<task>` keeps a standby of the task here from reading its changelogs, as one stuck
behind a slow broker would (its lag grows with every write of the active task);
`fail_state_thread:<task>` fails the host's state thread when the task starts running, as a restore
that cannot go on would.
Unset (always, outside tests), nothing happens."""

from __future__ import annotations

import logging
import os
import signal
import threading

from streams_rt.protocol import TaskId

log = logging.getLogger(__name__)

ENV = "STREAMS_RT_FAULTS"
KILL_POINTS = frozenset({"before_commit", "after_commit"})
STALL_POINTS = frozenset({"stall_on_close"})
HOLD_POINTS = frozenset({"hold_standby"})
FAIL_POINTS = frozenset({"fail_state_thread"})
POINTS = KILL_POINTS | STALL_POINTS | HOLD_POINTS | FAIL_POINTS


class InjectedFault(RuntimeError):
    """Raised at a fail point: the failure a test asked for."""


class Faults:
    def __init__(self, spec: str = "") -> None:
        self._armed: set[tuple[str, str]] = set()
        for item in filter(None, (part.strip() for part in spec.split(","))):
            point, _, task = item.partition(":")
            if point not in POINTS or not task:
                raise ValueError(f"{ENV}: {item!r} is not <point>:<task|*> with a point in {sorted(POINTS)}")
            self._armed.add((point, task))

    @classmethod
    def from_environment(cls) -> Faults:
        return cls(os.environ.get(ENV, ""))

    def armed(self, point: str, task: TaskId) -> bool:
        return (point, str(task)) in self._armed or (point, "*") in self._armed

    def reached(self, point: str, task: TaskId) -> None:
        if not self.armed(point, task):
            return
        if point in STALL_POINTS:
            log.warning("fault injection: %s of task %s hangs for good", point, task)
            threading.Event().wait()
        elif point in FAIL_POINTS:
            raise InjectedFault(f"fault injection: {point} at task {task}")
        else:
            log.warning("fault injection: killing this host at %s of task %s", point, task)
            logging.shutdown()
            os.kill(os.getpid(), signal.SIGKILL)
