"""What a reader does when a task's batch is refused because the task is moving (or its host cannot
be reached), pure: follow the task to its new owner, ask again in a moment, or sit the micro-batch
out (its records then come with the task's next batch).

Waiting holds the whole micro-batch (it ends when its last partition does), so a reader waits only
for what ends within a moment: a round giving the task to a member (no owner yet, or one that has
not reported for the new generation), a host the coordinator is still checking after a reader found
it unreachable, and an owner caught up on the task that is opening it (a standby being promoted).
Sitting out instead costs the task's records a whole micro-batch more: with a standby, the takeover
takes less than that. A task whose new owner must restore it is sat out at once, and every wait
ends after TAKEOVER_WAIT_S."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from streams_rt.rpc.tasks import ASSIGNED, UNASSIGNED, TaskStatus
from streams_rt.runtime.planning import RUNNING, takes_over_at_once

MOVING = frozenset({"NOT_OWNER", "RESTORING", "UNREACHABLE"})  # refusals of a task between owners
UNREACHABLE = "UNREACHABLE"
# A caught-up takeover (fencing the previous owner, the changelogs' tail) takes 0.3-0.6 s on a busy
# 2-core machine; past this the task is sat out rather than hold every other task's next records.
TAKEOVER_WAIT_S = 3.0


class Next(Enum):
    FOLLOW = "follow"  # ask `endpoint` now (the owner the coordinator names)
    WAIT = "wait"  # ask `endpoint` again after a moment
    SIT_OUT = "sit out"


@dataclass(frozen=True)
class Step:
    next: Next
    endpoint: str  # "" when no owner runs the task


def after_refusal(code: str, status: TaskStatus | None, endpoint: str, waited_s: float) -> Step:
    """The reader's next step after `endpoint` refused the task's batch with `code` (or could not be
    reached), given the coordinator's `status` of the task (None: the task is unknown to it), having
    waited `waited_s` since the first refusal of this batch."""
    phase = status.phase if status is not None else ""
    owner = (status.endpoint or "") if status is not None and phase == RUNNING else ""
    patient = waited_s < TAKEOVER_WAIT_S
    if status is not None and takes_over_at_once(status):
        return Step(Next.WAIT, status.endpoint or "") if patient else Step(Next.SIT_OUT, "")
    if phase in (ASSIGNED, UNASSIGNED) or (code == UNREACHABLE and owner == endpoint):
        return Step(Next.WAIT, owner) if patient else Step(Next.SIT_OUT, "")
    if code in MOVING and owner in ("", endpoint):
        return Step(Next.SIT_OUT, "")
    return Step(Next.FOLLOW, owner)
