"""StateConfig read from properties through the registry: typed values, one-line errors."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from streams_rt.config import ConfigError
from streams_rt.state import EXACTLY_ONCE_V2, StateConfig

BASE = {"application.id": "a", "bootstrap.servers": "x:1, y:2"}


def test_values_arrive_typed() -> None:
    config = StateConfig.from_properties({**BASE, "state.dir": "/s", "state.cleanup.delay.ms": "5",
                                          "commit.interval.ms": 100, "replication.factor": "-1",
                                          "processing.guarantee": EXACTLY_ONCE_V2})
    assert (config.state_dir, config.state_cleanup_delay_ms, config.commit_interval_ms) == (Path("/s"), 5, 100)
    assert config.bootstrap_servers == "x:1,y:2" and config.replication_factor == -1 and config.exactly_once


def test_an_unknown_key_names_the_closest_one() -> None:
    with pytest.raises(ConfigError, match=r"^unknown configuration key 'state\.dirr'; did you mean 'state\.dir'\?$"):
        StateConfig.from_properties({**BASE, "state.dirr": "/s"})


class NeedsArguments:
    def __init__(self, level: int) -> None:
        self.level = level

    def set_config(self, store_name: str, options: object, configs: Mapping[str, Any]) -> None:
        """Never called: the class cannot be made without arguments."""


def test_a_setter_class_that_cannot_be_made_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        StateConfig.from_properties({**BASE, "rocksdb.config.setter": f"{__name__}:NeedsArguments"})
    assert caught.value.key == "rocksdb.config.setter"
    assert str(caught.value).startswith("rocksdb.config.setter: NeedsArguments() failed (TypeError: ")
