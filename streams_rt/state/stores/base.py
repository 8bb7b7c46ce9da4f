"""What every store shares, whatever keeps its data: a per-commit overlay of uncommitted writes, the
changelog they are logged to, and the changelog offset the store has applied.

Writes go to the overlay (read back by the store's lookups) and to the changelog; `commit` applies
the overlay together with the changelog offset it reaches, atomically. So a store only ever holds
committed data, and it knows exactly which changelog prefix that is (KIP-892's idea): a restore
resumes from the store's own offset, not from a file that may disagree with it. Restore and standby
updates bypass the overlay and apply changelog records in bulk, with their last offset.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from streams_rt.state.errors import StoreClosedError

# (key, value or None for a delete); bound to the store's changelog topic and partition.
ChangelogSend = Callable[[bytes, bytes | None], None]


class StateStore(ABC):
    """A named store of one task. Subclasses add the reads and writes of their kind (key-value,
    window) and a backend (RocksDB, memory)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pending: dict[bytes, bytes | None] = {}
        self._send: ChangelogSend | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @abstractmethod
    def open(self) -> None:
        """Open (or reopen) for processing."""

    @abstractmethod
    def close(self) -> None:
        """Close; uncommitted writes are dropped (committing first is the task's job)."""

    @abstractmethod
    def wipe(self) -> None:
        """Delete everything the store holds, its applied offset included."""

    @property
    @abstractmethod
    def is_open(self) -> bool: ...

    @abstractmethod
    def is_empty(self) -> bool:
        """True when the store holds no committed entry."""

    @abstractmethod
    def applied_offset(self) -> int | None:
        """The offset of the last changelog record the store's committed data includes (None: it
        has none, e.g. never written, or written before offsets were kept)."""

    # -- logging and commit ------------------------------------------------------------------
    def attach_changelog(self, send: ChangelogSend | None) -> None:
        """Route writes to a changelog (None: a standby, which must not be written to)."""
        self._send = send

    def _write(self, key: bytes, value: bytes | None) -> None:
        if self._send is None:
            raise StoreClosedError(f"store {self.name} is read-only here (standby or not initialised)")
        self._send(key, value)
        self._pending[key] = value

    def commit(self, changelog_offset: int | None) -> None:
        """Apply the overlay and record `changelog_offset` (the changelog's last record this data
        includes; None when nothing was logged) in one atomic write."""
        if not self._pending and changelog_offset is None:
            return
        self._commit_pending(self._pending, changelog_offset)
        self._pending = {}

    def rollback(self) -> None:
        """Drop the uncommitted writes (a failed batch): the store stays as of its last commit."""
        self._pending = {}

    @abstractmethod
    def _commit_pending(self, pending: dict[bytes, bytes | None], changelog_offset: int | None) -> None: ...

    def sync(self) -> None:  # noqa: B027 - nothing to do for a store that keeps nothing on disk
        """Make everything committed or applied so far durable, before a checkpoint names it."""

    def start_sync(self) -> None:  # noqa: B027 - nothing to do for a store that keeps nothing on disk
        """Start making what was applied durable, without waiting (`sync` waits): stores whose
        restores end together then flush at once rather than one after another."""

    # -- restore -----------------------------------------------------------------------------
    @abstractmethod
    def apply_changelog(self, keys: Sequence[bytes], values: Sequence[bytes | None], last_offset: int) -> None:
        """Apply changelog records (keys never None, a None value deletes) and record `last_offset`,
        in one write; the caller calls `sync` before checkpointing."""

    def begin_restore(self) -> None:
        """Records are about to be restored in bulk (a backend may open with bulk options)."""
        if not self.is_open:
            self.open()

    def finish_restore(self) -> None:
        """The restore is over: make it durable and get ready for processing."""
        if not self.is_open:
            self.open()
        self.sync()
