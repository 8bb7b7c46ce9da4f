"""Local state: RocksDB stores with changelog topics, checkpoint files, restore and standby updates,
in Kafka Streams' state directory layout."""

from streams_rt.state.changelog import ChangelogSpec, ChangelogWriter, changelog_topic, ensure_changelog_topics
from streams_rt.state.checkpoint import OffsetCheckpoint, format_checkpoint, offset_sum, parse_checkpoint
from streams_rt.state.config import AT_LEAST_ONCE, EXACTLY_ONCE_V2, StateConfig
from streams_rt.state.errors import (
    ChangelogError,
    CorruptCheckpoint,
    StateDirectoryLockedError,
    StateError,
    StoreClosedError,
    TaskLockedError,
)
from streams_rt.state.restore import ConsoleRestoreListener, StateRestoreListener
from streams_rt.state.standby import StandbyUpdater
from streams_rt.state.state_directory import StateDirectory
from streams_rt.state.task_state import StoreSpec, TaskState, WindowSpec

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE_V2",
    "ChangelogError",
    "ChangelogSpec",
    "ChangelogWriter",
    "ConsoleRestoreListener",
    "CorruptCheckpoint",
    "OffsetCheckpoint",
    "StandbyUpdater",
    "StateConfig",
    "StateDirectory",
    "StateDirectoryLockedError",
    "StateError",
    "StateRestoreListener",
    "StoreClosedError",
    "StoreSpec",
    "TaskLockedError",
    "TaskState",
    "WindowSpec",
    "changelog_topic",
    "ensure_changelog_topics",
    "format_checkpoint",
    "offset_sum",
    "parse_checkpoint",
]
