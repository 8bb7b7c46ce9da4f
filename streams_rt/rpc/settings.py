"""The control plane's settings: the bounds a coordinator holds every request to, and the security
switches every streams_rt Flight endpoint and client share. Kafka's broker names where Kafka has the
bound, `rpc.*` where Spark's `spark.authenticate` / `spark.ssl.*` have the switch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from streams_rt.rpc.transport import TlsIdentity

MIB = 1024 * 1024


def _bool(props: Mapping[str, object], key: str, default: bool) -> bool:
    value = props.get(key, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{key} must be true or false, got {str(value)[:40]!r}")


def _int(props: Mapping[str, object], key: str, default: int) -> int:
    value = props.get(key, default)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise ValueError(f"{key} must be an integer, got {str(value)[:40]!r}")


def _path(props: Mapping[str, object], key: str) -> str | None:
    value = props.get(key)
    return None if value in (None, "") else str(value)


@dataclass(frozen=True)
class ControlPlaneSettings:
    authenticate: bool = True  # rpc.authenticate: a secret per application run guards every call
    ssl_enabled: bool = False  # rpc.ssl.enabled: servers speak TLS only, clients expect it
    ssl_certificate_chain_location: str | None = None  # rpc.ssl.certificate.chain.location (server, PEM)
    ssl_private_key_location: str | None = None  # rpc.ssl.private.key.location (server, PEM)
    ssl_truststore_location: str | None = None  # rpc.ssl.truststore.location (client, PEM; None: system roots)
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms (Kafka's default)
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms (Kafka's default)
    max_rebalance_timeout_ms: int = 1_800_000  # group.max.rebalance.timeout.ms: caps max.poll.interval.ms
    max_request_bytes: int = 4 * MIB  # rpc.request.max.bytes: a larger request body is refused unread
    max_subscription_bytes: int = MIB  # group.max.subscription.bytes: a member's SubscriptionInfo

    def __post_init__(self) -> None:
        if not 0 < self.min_session_timeout_ms <= self.max_session_timeout_ms:
            raise ValueError(
                "group.min.session.timeout.ms must be positive and at most group.max.session.timeout.ms,"
                f" got {self.min_session_timeout_ms} and {self.max_session_timeout_ms}"
            )
        for key, value in (
            ("group.max.rebalance.timeout.ms", self.max_rebalance_timeout_ms),
            ("rpc.request.max.bytes", self.max_request_bytes),
            ("group.max.subscription.bytes", self.max_subscription_bytes),
        ):
            if value <= 0:
                raise ValueError(f"{key} must be positive, got {value}")
        if self.ssl_enabled and (self.ssl_certificate_chain_location is None) != (self.ssl_private_key_location is None):
            raise ValueError("rpc.ssl.certificate.chain.location and rpc.ssl.private.key.location go together")

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> ControlPlaneSettings:
        """Raises ValueError naming the key whose value does not parse or fit."""
        d = cls()
        return cls(
            authenticate=_bool(props, "rpc.authenticate", d.authenticate),
            ssl_enabled=_bool(props, "rpc.ssl.enabled", d.ssl_enabled),
            ssl_certificate_chain_location=_path(props, "rpc.ssl.certificate.chain.location"),
            ssl_private_key_location=_path(props, "rpc.ssl.private.key.location"),
            ssl_truststore_location=_path(props, "rpc.ssl.truststore.location"),
            min_session_timeout_ms=_int(props, "group.min.session.timeout.ms", d.min_session_timeout_ms),
            max_session_timeout_ms=_int(props, "group.max.session.timeout.ms", d.max_session_timeout_ms),
            max_rebalance_timeout_ms=_int(props, "group.max.rebalance.timeout.ms", d.max_rebalance_timeout_ms),
            max_request_bytes=_int(props, "rpc.request.max.bytes", d.max_request_bytes),
            max_subscription_bytes=_int(props, "group.max.subscription.bytes", d.max_subscription_bytes),
        )

    def server_tls(self) -> TlsIdentity | None:
        """The certificate a server presents, read now; None when TLS is off."""
        if not self.ssl_enabled:
            return None
        if self.ssl_certificate_chain_location is None or self.ssl_private_key_location is None:
            raise ValueError("rpc.ssl.enabled=true: a server needs rpc.ssl.certificate.chain.location and"
                             " rpc.ssl.private.key.location")
        return TlsIdentity(
            Path(self.ssl_certificate_chain_location).read_bytes(), Path(self.ssl_private_key_location).read_bytes()
        )

    def client_root_certs(self) -> bytes | None:
        """The certificates a client trusts for a TLS server (None: the system's)."""
        if not self.ssl_enabled or self.ssl_truststore_location is None:
            return None
        return Path(self.ssl_truststore_location).read_bytes()
