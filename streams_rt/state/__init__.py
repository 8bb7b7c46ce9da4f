"""Local state: RocksDB stores with changelog topics, checkpoint files, restore and standby updates,
in Kafka Streams' state directory layout."""

from streams_rt.state.changelog import ChangelogSpec, ChangelogWriter, changelog_topic, ensure_changelog_topics
from streams_rt.state.changelog_reader import ChangelogReader
from streams_rt.state.checkpoint import OffsetCheckpoint, format_checkpoint, offset_sum, parse_checkpoint
from streams_rt.state.config import AT_LEAST_ONCE, EXACTLY_ONCE_V2, StateConfig
from streams_rt.state.errors import (
    ChangelogError,
    CorruptCheckpoint,
    StateDirectoryLockedError,
    StateError,
    StatePathError,
    StoreClosedError,
    StoreCorrupted,
    TaskLockedError,
)
from streams_rt.state.restore import ConsoleRestoreListener, StateRestoreListener
from streams_rt.state.state_directory import StateDirectory
from streams_rt.state.stores import (
    InMemoryKeyValueStore,
    InMemoryWindowStore,
    KeyValueStore,
    RocksDBKeyValueStore,
    RocksDBWindowStore,
    StateStore,
    WindowStore,
)
from streams_rt.state.task_state import Mode, StoreSpec, TaskState, TaskStateBusy, TaskStateError, WindowSpec
from streams_rt.state.updater import StateUpdater

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE_V2",
    "ChangelogError",
    "ChangelogReader",
    "ChangelogSpec",
    "ChangelogWriter",
    "ConsoleRestoreListener",
    "CorruptCheckpoint",
    "OffsetCheckpoint",
    "InMemoryKeyValueStore",
    "InMemoryWindowStore",
    "KeyValueStore",
    "Mode",
    "RocksDBKeyValueStore",
    "RocksDBWindowStore",
    "StateConfig",
    "StateDirectory",
    "StateDirectoryLockedError",
    "StateError",
    "StatePathError",
    "StateRestoreListener",
    "StateStore",
    "StateUpdater",
    "StoreClosedError",
    "StoreCorrupted",
    "StoreSpec",
    "TaskLockedError",
    "TaskState",
    "TaskStateBusy",
    "TaskStateError",
    "WindowSpec",
    "WindowStore",
    "changelog_topic",
    "ensure_changelog_topics",
    "format_checkpoint",
    "offset_sum",
    "parse_checkpoint",
]
