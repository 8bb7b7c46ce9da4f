"""Which rebalance protocol and which metadata version cap a round runs with.

Three inputs: the coordinator's own `upgrade.from` (KIP-429's first bounce keeps the group on the
old metadata version and EAGER), an operator's runtime toggle (KIP-125's dynamic toggle), and what
the members speak."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from streams_rt.protocol import RebalanceProtocol, parse_upgrade_from

log = logging.getLogger(__name__)


class ProtocolPolicy:
    def __init__(self, upgrade_from: str | None = None) -> None:
        """Raises streams_rt.protocol.UpgradeFromError for a value Kafka would not accept."""
        mode = parse_upgrade_from(upgrade_from)
        self.upgrade_from = upgrade_from
        # None: no cap but the coordinator's own latest version (which its codec decides).
        self.metadata_version_cap = mode.metadata_version if upgrade_from is not None else None
        self._upgrade_protocol = mode.protocol if upgrade_from is not None else None
        self.override: RebalanceProtocol | None = None

    def set_override(self, protocol: RebalanceProtocol | None) -> None:
        """The operator's toggle; None returns the choice to upgrade.from and the members."""
        log.info("rebalance protocol toggled to %s", protocol.name if protocol else "automatic")
        self.override = protocol

    def choose(self, member_protocols: Iterable[RebalanceProtocol]) -> RebalanceProtocol:
        """The toggle wins, then upgrade.from; otherwise EAGER only when every member speaks only
        EAGER. A mixed group runs COOPERATIVE: the hand-off guard keeps it safe, since EAGER members
        revoke everything before they join and so claim nothing (KIP-429's second bounce)."""
        if self.override is not None:
            return self.override
        if self._upgrade_protocol is RebalanceProtocol.EAGER:
            return RebalanceProtocol.EAGER
        protocols = list(member_protocols)
        if protocols and all(p is RebalanceProtocol.EAGER for p in protocols):
            return RebalanceProtocol.EAGER
        return RebalanceProtocol.COOPERATIVE

    def describe(self) -> dict[str, object]:
        return {
            "upgrade_from": self.upgrade_from,
            "override": self.override.name if self.override else None,
            "metadata_version_cap": self.metadata_version_cap,
        }
