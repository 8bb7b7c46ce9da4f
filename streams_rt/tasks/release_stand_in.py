"""A test's stand-in for an older release of streams_rt, as Kafka's upgrade tests stand one in for
a future release: a host that speaks metadata versions up to `latest_supported_version` only and,
like Kafka Streams before 2.4, the EAGER rebalance protocol. Not an operator setting (no property,
no `--help` entry): upgrade tests start an application "on the old release" with it.

It reaches a host two ways. In the host file (`latest_supported_version`, `rebalance_protocol`),
which `LocalApplication`/`StreamsRuntime` write, executors included; a restart drops both, so a
bounce without it starts "the new release". Or in the environment variable below, which an "old
interpreter" wrapper script sets (`streams-rt host restart --python OLD`): the host reads it once
and removes it, so a later bounce to another interpreter does not inherit it."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from streams_rt.protocol import LATEST_SUPPORTED_VERSION, RebalanceProtocol

ENVIRONMENT_VARIABLE = "STREAMS_RT_RELEASE_STAND_IN"
VERSION_KEY, PROTOCOL_KEY = "latest_supported_version", "rebalance_protocol"


@dataclass(frozen=True)
class ReleaseStandIn:
    latest_supported_version: int
    rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER

    def __post_init__(self) -> None:
        if not 1 <= self.latest_supported_version <= LATEST_SUPPORTED_VERSION:
            raise ValueError(f"a stand-in release speaks versions 1 to {LATEST_SUPPORTED_VERSION}, "
                             f"not {self.latest_supported_version}")

    def host_config(self) -> dict[str, Any]:
        """The host file's keys for it."""
        return {VERSION_KEY: self.latest_supported_version, PROTOCOL_KEY: self.rebalance_protocol.name}

    def environment(self) -> dict[str, str]:
        """The environment an "old interpreter" wrapper sets: `STREAMS_RT_RELEASE_STAND_IN=10:EAGER`."""
        return {ENVIRONMENT_VARIABLE: f"{self.latest_supported_version}:{self.rebalance_protocol.name}"}

    @classmethod
    def parse(cls, text: str) -> ReleaseStandIn:
        """`10:EAGER` or `10` (EAGER); raises ValueError naming the variable."""
        version, _, protocol = text.partition(":")
        try:
            return cls(int(version), RebalanceProtocol[protocol.upper() or "EAGER"])
        except (KeyError, ValueError) as e:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}={text!r} is not VERSION[:EAGER|COOPERATIVE] ({e})") from None

    @classmethod
    def take_from_environment(cls, environ: MutableMapping[str, str]) -> ReleaseStandIn | None:
        """The stand-in the environment asks for, removed from it (None: this release)."""
        text = environ.pop(ENVIRONMENT_VARIABLE, None)
        return None if text is None else cls.parse(text)


def protocol_from_host_config(config: Mapping[str, Any]) -> RebalanceProtocol | None:
    """The stand-in's rebalance protocol in a host file (None: as upgrade.from says)."""
    name = config.get(PROTOCOL_KEY)
    if name is None:
        return None
    try:
        return RebalanceProtocol[str(name)]
    except KeyError:
        raise ValueError(f"the host file's {PROTOCOL_KEY} {name!r} is not EAGER or COOPERATIVE") from None
