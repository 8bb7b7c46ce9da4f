"""State settings under Kafka Streams' config names (`state.dir`, `application.id`, ...), read from
a resolved configuration: the registry parses and checks every key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from streams_rt.config import ConfigError, StreamsConfig, resolve
from streams_rt.config.registry import (
    APPLICATION_ID,
    AT_LEAST_ONCE,
    BOOTSTRAP_SERVERS,
    COMMIT_INTERVAL_MS,
    EXACTLY_ONCE_V2,
    PROCESSING_GUARANTEE,
    REPLICATION_FACTOR,
    ROCKSDB_BLOCK_CACHE_BYTES,
    ROCKSDB_CONFIG_SETTER,
    ROCKSDB_MAX_WRITE_BUFFERS,
    ROCKSDB_WRITE_BUFFER_BYTES,
    STATE_CLEANUP_DELAY_MS,
    STATE_DIR,
)
from streams_rt.state.changelog import ChangelogSpec, ensure_changelog_topics
from streams_rt.state.changelog_reader import ChangelogReader
from streams_rt.state.restore import ConsoleRestoreListener, StateRestoreListener, restore_consumer
from streams_rt.state.state_directory import StateDirectory
from streams_rt.state.stores.rocksdb_options import DEFAULT_SETTINGS, RocksDBConfigSetter, RocksDBSettings

__all__ = ["AT_LEAST_ONCE", "EXACTLY_ONCE_V2", "StateConfig"]


@dataclass(frozen=True)
class StateConfig:
    """Typed state settings; `from_config` is how properties become one (direct construction is for
    code and tests that already hold typed values)."""

    application_id: str
    bootstrap_servers: str
    state_dir: Path = field(default_factory=STATE_DIR.default_value)
    state_cleanup_delay_ms: int = STATE_CLEANUP_DELAY_MS.default_value()
    commit_interval_ms: int = COMMIT_INTERVAL_MS.default_value()
    processing_guarantee: str = PROCESSING_GUARANTEE.default_value()
    rocksdb: RocksDBSettings = DEFAULT_SETTINGS
    replication_factor: int = REPLICATION_FACTOR.default_value()

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
    def from_config(cls, config: StreamsConfig) -> StateConfig:
        """The state settings of a resolved configuration. A `rocksdb.config.setter` naming a class
        is instantiated, as Kafka instantiates its setter class; it is handed the properties as given."""
        servers = config.get(BOOTSTRAP_SERVERS)
        return cls(
            application_id=config.get(APPLICATION_ID),
            bootstrap_servers=",".join(servers),
            state_dir=config.get(STATE_DIR),
            state_cleanup_delay_ms=config.get(STATE_CLEANUP_DELAY_MS),
            commit_interval_ms=config.get(COMMIT_INTERVAL_MS),
            processing_guarantee=config.get(PROCESSING_GUARANTEE),
            rocksdb=RocksDBSettings(
                block_cache_bytes=config.get(ROCKSDB_BLOCK_CACHE_BYTES),
                write_buffer_bytes=config.get(ROCKSDB_WRITE_BUFFER_BYTES),
                max_write_buffers=config.get(ROCKSDB_MAX_WRITE_BUFFERS),
                config_setter=_setter(config.get(ROCKSDB_CONFIG_SETTER)),
                configs=config.originals,
            ),
            replication_factor=config.get(REPLICATION_FACTOR),
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> StateConfig:
        """`from_config(resolve(props))`: raises ConfigError (one line, naming the key) or ConfigErrors."""
        return cls.from_config(resolve(props))


def _setter(found: object) -> RocksDBConfigSetter | None:
    """The setter `rocksdb.config.setter` names: the registry checked that `found` (an object or a
    class) has a `set_config` method; a class must make an instance without arguments."""
    if not isinstance(found, type):
        assert found is None or isinstance(found, RocksDBConfigSetter), found
        return found
    try:
        setter = found()
    except Exception as error:  # noqa: BLE001 - user code: whatever its constructor raises makes the setting unusable
        detail = " ".join(f"{type(error).__name__}: {error}".split())
        raise ConfigError(ROCKSDB_CONFIG_SETTER.name, found,
                          f"{ROCKSDB_CONFIG_SETTER.name}: {found.__qualname__}() failed ({detail})") from None
    assert isinstance(setter, RocksDBConfigSetter), setter
    return setter
