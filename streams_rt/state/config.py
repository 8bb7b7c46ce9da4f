"""State settings under Kafka Streams' config names (`state.dir`, `application.id`, ...)."""

from __future__ import annotations

import importlib
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streams_rt.state.changelog import ChangelogSpec, ensure_changelog_topics
from streams_rt.state.changelog_reader import ChangelogReader
from streams_rt.state.restore import ConsoleRestoreListener, StateRestoreListener, restore_consumer
from streams_rt.state.state_directory import StateDirectory
from streams_rt.state.stores.rocksdb_options import RocksDBConfigSetter

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"


def default_state_dir() -> Path:
    """Kafka's default is `${java.io.tmpdir}/kafka-streams`; ours sits next to it."""
    return Path(tempfile.gettempdir()) / "streams-rt"


@dataclass(frozen=True)
class StateConfig:
    application_id: str
    bootstrap_servers: str
    state_dir: Path = field(default_factory=default_state_dir)
    state_cleanup_delay_ms: int = 600_000
    commit_interval_ms: int = 30_000
    processing_guarantee: str = AT_LEAST_ONCE
    rocksdb_config_setter: RocksDBConfigSetter | None = None
    replication_factor: int = 1

    def __post_init__(self) -> None:
        if not self.application_id or "/" in self.application_id:
            raise ValueError(f"application.id must be a non-empty name without '/': {self.application_id!r}")
        if self.processing_guarantee not in (AT_LEAST_ONCE, EXACTLY_ONCE_V2):
            raise ValueError(f"processing.guarantee must be {AT_LEAST_ONCE} or {EXACTLY_ONCE_V2}")

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == EXACTLY_ONCE_V2

    def open_state_directory(self, lock_application: bool = True) -> StateDirectory:
        """This application's state directory under `state.dir`, cleaned after `state.cleanup.delay.ms`."""
        return StateDirectory(self.state_dir, self.application_id, self.state_cleanup_delay_ms, lock_application)

    def changelog_reader(self, listener: StateRestoreListener | None = None) -> ChangelogReader:
        """The one changelog reader a host shares among its tasks; restores report to `listener`
        (default: a console progress bar and one log line per store)."""
        consumer = restore_consumer(self.bootstrap_servers, f"{self.application_id}-restore")
        return ChangelogReader(consumer, listener if listener is not None else ConsoleRestoreListener())

    def ensure_changelog_topics(self, specs: Iterable[ChangelogSpec], partitions: int) -> None:
        """Create this application's missing changelog topics with `replication.factor` replicas."""
        ensure_changelog_topics(self.bootstrap_servers, specs, partitions, self.replication_factor)

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> StateConfig:
        """Build from Kafka-style properties; `rocksdb.config.setter` may be an object or 'module:attr'."""
        setter = props.get("rocksdb.config.setter")
        if isinstance(setter, str):
            module, _, attr = setter.partition(":")
            setter = getattr(importlib.import_module(module), attr)
            setter = setter() if isinstance(setter, type) else setter
        kwargs: dict[str, Any] = {
            "application_id": props["application.id"],
            "bootstrap_servers": props["bootstrap.servers"],
            "rocksdb_config_setter": setter,
        }
        if "state.dir" in props:
            kwargs["state_dir"] = Path(props["state.dir"])
        for key, name in (
            ("state.cleanup.delay.ms", "state_cleanup_delay_ms"),
            ("commit.interval.ms", "commit_interval_ms"),
            ("replication.factor", "replication_factor"),
        ):
            if key in props:
                kwargs[name] = int(props[key])
        if "processing.guarantee" in props:
            kwargs["processing_guarantee"] = str(props["processing.guarantee"])
        return cls(**kwargs)
