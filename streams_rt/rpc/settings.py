"""The control plane's settings: the bounds a coordinator holds every request to, and the security
switches every streams_rt Flight endpoint and client share. Kafka's broker names where Kafka has the
bound, `rpc.*` where Spark's `spark.authenticate` / `spark.ssl.*` have the switch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from streams_rt.config import StreamsConfig, resolve
from streams_rt.config.registry import (
    GROUP_MAX_REBALANCE_TIMEOUT_MS,
    GROUP_MAX_SESSION_TIMEOUT_MS,
    GROUP_MAX_SUBSCRIPTION_BYTES,
    GROUP_MIN_SESSION_TIMEOUT_MS,
    RPC_AUTHENTICATE,
    RPC_REQUEST_MAX_BYTES,
    RPC_SSL_CERTIFICATE_CHAIN_LOCATION,
    RPC_SSL_ENABLED,
    RPC_SSL_PRIVATE_KEY_LOCATION,
    RPC_SSL_TRUSTSTORE_LOCATION,
)
from streams_rt.rpc.transport import TlsIdentity


@dataclass(frozen=True)
class ControlPlaneSettings:
    """Each field is the key of the same name (`rpc.authenticate`, `group.min.session.timeout.ms`, ...);
    the registry defines their defaults and checks them."""

    authenticate: bool = RPC_AUTHENTICATE.default_value()
    ssl_enabled: bool = RPC_SSL_ENABLED.default_value()
    ssl_certificate_chain_location: Path | None = None  # the server's, PEM
    ssl_private_key_location: Path | None = None  # the server's, PEM
    ssl_truststore_location: Path | None = None  # a client's, PEM; None: the system's roots
    min_session_timeout_ms: int = GROUP_MIN_SESSION_TIMEOUT_MS.default_value()
    max_session_timeout_ms: int = GROUP_MAX_SESSION_TIMEOUT_MS.default_value()
    max_rebalance_timeout_ms: int = GROUP_MAX_REBALANCE_TIMEOUT_MS.default_value()  # caps max.poll.interval.ms
    max_request_bytes: int = RPC_REQUEST_MAX_BYTES.default_value()  # a larger body is refused unread
    max_subscription_bytes: int = GROUP_MAX_SUBSCRIPTION_BYTES.default_value()  # a member's SubscriptionInfo

    @classmethod
    def from_config(cls, config: StreamsConfig) -> ControlPlaneSettings:
        return cls(
            authenticate=config.get(RPC_AUTHENTICATE),
            ssl_enabled=config.get(RPC_SSL_ENABLED),
            ssl_certificate_chain_location=config.get(RPC_SSL_CERTIFICATE_CHAIN_LOCATION),
            ssl_private_key_location=config.get(RPC_SSL_PRIVATE_KEY_LOCATION),
            ssl_truststore_location=config.get(RPC_SSL_TRUSTSTORE_LOCATION),
            min_session_timeout_ms=config.get(GROUP_MIN_SESSION_TIMEOUT_MS),
            max_session_timeout_ms=config.get(GROUP_MAX_SESSION_TIMEOUT_MS),
            max_rebalance_timeout_ms=config.get(GROUP_MAX_REBALANCE_TIMEOUT_MS),
            max_request_bytes=config.get(RPC_REQUEST_MAX_BYTES),
            max_subscription_bytes=config.get(GROUP_MAX_SUBSCRIPTION_BYTES),
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> ControlPlaneSettings:
        """`from_config(resolve(props))`: raises ConfigError (one line, naming the key) or ConfigErrors."""
        return cls.from_config(resolve(props))

    def server_tls_files(self) -> tuple[Path, Path] | None:
        """(certificate chain, private key) PEM files of a TLS server (the HTTP endpoints read
        files), or None when TLS is off."""
        if self.server_tls() is None:
            return None
        assert self.ssl_certificate_chain_location is not None and self.ssl_private_key_location is not None
        return self.ssl_certificate_chain_location, self.ssl_private_key_location

    def server_tls(self) -> TlsIdentity | None:
        """The certificate a server presents, read now; None when TLS is off."""
        if not self.ssl_enabled:
            return None
        if self.ssl_certificate_chain_location is None or self.ssl_private_key_location is None:
            raise ValueError("rpc.ssl.enabled=true: a server needs rpc.ssl.certificate.chain.location and"
                             " rpc.ssl.private.key.location")
        return TlsIdentity(self.ssl_certificate_chain_location.read_bytes(), self.ssl_private_key_location.read_bytes())

    def client_root_certs(self) -> bytes | None:
        """The certificates a client trusts for a TLS server (None: the system's)."""
        if not self.ssl_enabled or self.ssl_truststore_location is None:
            return None
        return self.ssl_truststore_location.read_bytes()
