"""Which members have gone quiet. A live member always has a call at the coordinator or one on its
way: it holds a heartbeat, or a sync during a round, and sends the next the moment one is answered.
A member with no call in flight for SILENCE_PROBE_MS was most likely killed between two calls,
where no held connection could drop to say so; its host is then probed once (a probe of a live
host removes nothing), instead of waiting out its session timeout. Pure: the server feeds it the
calls and asks it on every tick."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

SILENCE_PROBE_MS = 2_000


@dataclass
class _Calls:
    in_flight: int = 0
    quiet_since_ms: int = 0
    reported: bool = False  # this quiet spell was handed out already


class SilenceWatch:
    """Counts each member's calls in flight; `silent` names a member once per quiet spell."""

    def __init__(self, after_ms: int = SILENCE_PROBE_MS) -> None:
        self.after_ms = after_ms
        self._members: dict[str, _Calls] = {}

    def call_started(self, member_id: str) -> None:
        calls = self._members.setdefault(member_id, _Calls())
        calls.in_flight += 1
        calls.reported = False

    def call_ended(self, member_id: str, now_ms: int) -> None:
        calls = self._members.get(member_id)
        if calls is None or calls.in_flight == 0:
            return
        calls.in_flight -= 1
        if calls.in_flight == 0:
            calls.quiet_since_ms = now_ms

    def in_flight(self, member_id: str) -> int:
        """How many of the member's calls are held here now (a live member in a round: its sync)."""
        calls = self._members.get(member_id)
        return 0 if calls is None else calls.in_flight

    def silent(self, members: Collection[str], now_ms: int) -> list[str]:
        """The members of `members` quiet for `after_ms` or more and not named since their last call.
        Members no longer in `members` are forgotten; members never seen are not watched (one
        rebuilt from a record after a restart has its session timeout)."""
        for gone in self._members.keys() - set(members):
            del self._members[gone]
        named = []
        for member_id, calls in sorted(self._members.items()):
            if calls.in_flight == 0 and not calls.reported and now_ms - calls.quiet_since_ms >= self.after_ms:
                calls.reported = True
                named.append(member_id)
        return named
