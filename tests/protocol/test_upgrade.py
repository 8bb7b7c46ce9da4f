"""`upgrade.from` parsing."""

from __future__ import annotations

import pytest

from streams_rt.protocol import (
    ACCEPTED_UPGRADE_FROM,
    LATEST_SUPPORTED_VERSION,
    RebalanceProtocol,
    UpgradeFromError,
    parse_upgrade_from,
)

EAGER, COOPERATIVE = RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE


@pytest.mark.parametrize(
    ("value", "version", "protocol"),
    [
        ("0.10.0", 1, EAGER),
        ("0.10.1", 2, EAGER),
        ("0.10.2", 2, EAGER),
        ("0.11.0", 2, EAGER),
        ("1.0", 2, EAGER),
        ("1.1", 2, EAGER),
        ("2.0", LATEST_SUPPORTED_VERSION, EAGER),
        ("2.3", LATEST_SUPPORTED_VERSION, EAGER),
        ("2.4", LATEST_SUPPORTED_VERSION, COOPERATIVE),
        ("2.8", LATEST_SUPPORTED_VERSION, COOPERATIVE),
        ("3.0", LATEST_SUPPORTED_VERSION, COOPERATIVE),
        ("3.9", LATEST_SUPPORTED_VERSION, COOPERATIVE),
        (None, LATEST_SUPPORTED_VERSION, COOPERATIVE),
    ],
)
def test_mapping(value: str | None, version: int, protocol: RebalanceProtocol) -> None:
    mode = parse_upgrade_from(value)
    assert (mode.metadata_version, mode.protocol) == (version, protocol)


def test_accepted_values_are_kafkas_up_to_3_9() -> None:
    assert len(ACCEPTED_UPGRADE_FROM) == 25
    assert ACCEPTED_UPGRADE_FROM[0] == "0.10.0" and ACCEPTED_UPGRADE_FROM[-1] == "3.9"
    assert "2.9" not in ACCEPTED_UPGRADE_FROM


@pytest.mark.parametrize("value", ["", "4.0", "2.9", "0.9.0", "3.9.0", " 2.4", "latest", 2.4])
def test_other_values_are_configuration_errors_listing_the_accepted_ones(value: object) -> None:
    with pytest.raises(UpgradeFromError) as err:
        parse_upgrade_from(value)  # type: ignore[arg-type]
    assert repr(value) in str(err.value)
    assert all(accepted in str(err.value) for accepted in ACCEPTED_UPGRADE_FROM)
