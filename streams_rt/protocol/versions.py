"""The metadata version rules of version probing (KIP-268) and rolling upgrades, both sides, as pure
functions: the leader's (`RoundVersions`: which version a round answers at, from what the members
sent; Kafka's StreamsPartitionAssignor.assign) and the member's (`on_assignment_version`: what it does
with the answer; validateMetadataVersions and maybeUpdateSubscriptionVersion)."""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from streams_rt.protocol.types import EARLIEST_PROBEABLE_VERSION, LATEST_SUPPORTED_VERSION, UNKNOWN_VERSION


class SubscriptionVersions(Protocol):
    """The two version fields every subscription carries, even one above the leader's latest
    (SubscriptionInfo, FutureSubscriptionInfo, the coordinator's DecodedSubscription)."""

    @property
    def version(self) -> int: ...

    @property
    def latest_supported_version(self) -> int: ...  # UNKNOWN_VERSION for v1-2, which do not carry it


@dataclass(frozen=True)
class RoundVersions:
    """The leader's rule: answer at the lowest version anyone used; advertise the lowest latest
    version. Both are capped at the leader's latest version and at upgrade.from's metadata version."""

    used: int  # AssignmentInfo version sent to every member
    commonly_supported: int
    probing: bool  # someone subscribed above the leader's latest version

    @classmethod
    def of(cls, subscriptions: Collection[SubscriptionVersions], latest: int, cap: int | None = None) -> RoundVersions:
        """The versions of a round over `subscriptions` (at least one), for a leader whose latest
        version is `latest`; `cap` is upgrade.from's metadata version (None: no cap)."""
        cap = latest if cap is None else min(cap, latest)
        used = min(min(s.version, cap) for s in subscriptions)
        # v1-2 subscriptions do not carry a latest supported version: it is the used one.
        common = min(
            min(s.version if s.latest_supported_version == UNKNOWN_VERSION else s.latest_supported_version, cap)
            for s in subscriptions
        )
        probing = any(s.version > latest for s in subscriptions)
        return cls(used, common, probing)


class VersionMismatch(ValueError):
    """The leader answered with a version this member cannot have asked for: a protocol error."""


class VersionAction(enum.Enum):
    KEEP = "keep"  # keep using the same subscription version
    DOWNGRADE = "downgrade"  # the leader is older: use the commonly supported version and rejoin
    UPGRADE = "upgrade"  # every member now supports more: end of the rolling upgrade, rejoin


@dataclass(frozen=True)
class VersionDecision:
    action: VersionAction
    next_version: int  # the subscription version to send from now on

    @property
    def rejoin(self) -> bool:
        """Whether the member must trigger a new rebalance right away to use `next_version`."""
        return self.action is not VersionAction.KEEP


def on_assignment_version(
    used_version: int,
    received_version: int,
    commonly_supported_version: int,
    latest_supported_version: int = LATEST_SUPPORTED_VERSION,
) -> VersionDecision:
    """What a member that sent a `used_version` subscription does on an assignment at `received_version`.

    A version above the one sent, or a commonly supported version above this member's latest, is an
    error. From EARLIEST_PROBEABLE_VERSION on: a commonly supported version above the one in use means
    the rolling upgrade is over (upgrade to it); a received version below the one sent means the leader
    is older (downgrade to the commonly supported version). Older assignments carry no commonly
    supported version, so nothing changes."""
    if received_version > used_version:
        raise VersionMismatch(
            f"sent a version {used_version} subscription but got an assignment with higher version {received_version}"
        )
    if commonly_supported_version > latest_supported_version:
        raise VersionMismatch(
            f"commonly supported version {commonly_supported_version} is above this member's latest "
            f"supported version {latest_supported_version}"
        )
    if received_version >= EARLIEST_PROBEABLE_VERSION:
        if commonly_supported_version > used_version:
            return VersionDecision(VersionAction.UPGRADE, commonly_supported_version)
        if received_version < used_version:
            return VersionDecision(VersionAction.DOWNGRADE, commonly_supported_version)
    return VersionDecision(VersionAction.KEEP, used_version)
