"""`upgrade.from`: which subscription metadata version and rebalance protocol a member starts with
during a rolling upgrade from an older Kafka Streams release (KIP-268, KIP-429's two bounces)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from streams_rt.protocol.types import LATEST_SUPPORTED_VERSION


class RebalanceProtocol(enum.Enum):
    EAGER = "eager"  # every member revokes everything before each rebalance
    COOPERATIVE = "cooperative"  # only moving tasks are revoked, in a follow-up rebalance


class UpgradeFromError(ValueError):
    """An `upgrade.from` value that is not one of the accepted releases."""


@dataclass(frozen=True)
class UpgradeMode:
    metadata_version: int  # the subscription version to send until the second bounce
    protocol: RebalanceProtocol


_V1 = ("0.10.0",)
_V2 = ("0.10.1", "0.10.2", "0.11.0", "1.0", "1.1")
_EAGER_LATEST = ("2.0", "2.1", "2.2", "2.3")
_COOPERATIVE = ("2.4", "2.5", "2.6", "2.7", "2.8", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9")
ACCEPTED_UPGRADE_FROM: tuple[str, ...] = _V1 + _V2 + _EAGER_LATEST + _COOPERATIVE

_MODES: dict[str | None, UpgradeMode] = {
    None: UpgradeMode(LATEST_SUPPORTED_VERSION, RebalanceProtocol.COOPERATIVE),
    **{v: UpgradeMode(1, RebalanceProtocol.EAGER) for v in _V1},
    **{v: UpgradeMode(2, RebalanceProtocol.EAGER) for v in _V2},
    **{v: UpgradeMode(LATEST_SUPPORTED_VERSION, RebalanceProtocol.EAGER) for v in _EAGER_LATEST},
    **{v: UpgradeMode(LATEST_SUPPORTED_VERSION, RebalanceProtocol.COOPERATIVE) for v in _COOPERATIVE},
}


def parse_upgrade_from(value: str | None) -> UpgradeMode:
    """Map an `upgrade.from` setting (None when unset) to the metadata version and protocol to use."""
    try:
        return _MODES[value]
    except (KeyError, TypeError):
        accepted = ", ".join(ACCEPTED_UPGRADE_FROM)
        raise UpgradeFromError(f"invalid upgrade.from {value!r}: accepted values are {accepted}, or unset") from None
