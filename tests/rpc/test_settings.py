"""ControlPlaneSettings from Kafka/Spark-style properties, read through the configuration registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams_rt.config import ConfigError
from streams_rt.rpc.settings import ControlPlaneSettings
from tests.rpc.certificates import self_signed

APP = {"application.id": "app", "bootstrap.servers": "localhost:9092"}


def test_defaults_are_kafkas() -> None:
    s = ControlPlaneSettings.from_properties(APP)
    assert s == ControlPlaneSettings()
    assert (s.min_session_timeout_ms, s.max_session_timeout_ms) == (6_000, 1_800_000)
    assert s.authenticate and not s.ssl_enabled and s.server_tls() is None and s.client_root_certs() is None


def test_every_key_is_read(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    s = ControlPlaneSettings.from_properties({
        **APP, "rpc.authenticate": "false", "rpc.ssl.enabled": "TRUE",
        "rpc.ssl.certificate.chain.location": str(cert), "rpc.ssl.private.key.location": str(key),
        "rpc.ssl.truststore.location": str(cert),
        "group.min.session.timeout.ms": "100", "group.max.session.timeout.ms": 200,
        "group.max.rebalance.timeout.ms": "300", "rpc.request.max.bytes": "400", "group.max.subscription.bytes": 500,
    })
    assert not s.authenticate and s.ssl_enabled
    assert (s.min_session_timeout_ms, s.max_session_timeout_ms, s.max_rebalance_timeout_ms) == (100, 200, 300)
    assert (s.max_request_bytes, s.max_subscription_bytes) == (400, 500)
    tls = s.server_tls()
    assert tls is not None and tls.certificate_chain == cert.read_bytes() and tls.private_key == key.read_bytes()
    assert s.client_root_certs() == cert.read_bytes()


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"rpc.authenticate": "yes"}, "rpc.authenticate"),
        ({"group.min.session.timeout.ms": "6s"}, "group.min.session.timeout.ms"),
        ({"group.min.session.timeout.ms": 10, "group.max.session.timeout.ms": 5}, "group.min.session.timeout.ms"),
        ({"rpc.request.max.bytes": 0}, "rpc.request.max.bytes"),
        ({"rpc.ssl.enabled": "true", "rpc.ssl.private.key.location": "k.pem"}, "rpc.ssl.certificate.chain.location"),
        ({"group.min.session.timeout.ms": 0}, "group.min.session.timeout.ms"),
        ({"rpc.authenticat": "false"}, "rpc.authenticate"),  # a typo: the closest key is named
    ],
)
def test_a_bad_value_names_its_key(props: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")) as caught:
        ControlPlaneSettings.from_properties({**APP, **props})
    assert "\n" not in str(caught.value)


def test_tls_on_a_server_without_a_certificate_is_refused() -> None:
    with pytest.raises(ValueError, match="rpc.ssl.certificate.chain.location"):
        ControlPlaneSettings(ssl_enabled=True).server_tls()
