"""The coordinator's small durable state, so generations keep increasing across a driver restart
and the members that come back keep their tasks.

A generation is saved before any member can fetch an assignment of it: a restarted coordinator
then never hands out a second, different assignment under a generation members already hold, and
knows every task it may have handed out."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from streams_rt.atomic_file import atomic_write_bytes
from streams_rt.coordinator.group_record import GroupRecord


@dataclass(frozen=True)
class CoordinatorSnapshot:
    """One JSON document per application: the application id beside the group record's fields
    (`{"application_id", "generation", "protocol", "members"}`)."""

    application_id: str
    group: GroupRecord

    def to_json(self) -> bytes:
        fields = {"application_id": self.application_id, **self.group.to_json()}
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> CoordinatorSnapshot:
        """Raises ValueError for anything but a snapshot; older snapshots without members read as empty."""
        try:
            raw = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"not a coordinator snapshot: {e}") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("application_id"), str):
            raise ValueError(f"not a coordinator snapshot: {data[:200]!r}")
        try:
            return cls(raw["application_id"], GroupRecord.from_json(raw))
        except ValueError as e:
            raise ValueError(f"not a coordinator snapshot: {e}") from None


class StateStore(Protocol):
    def load(self) -> CoordinatorSnapshot | None: ...

    def save(self, snapshot: CoordinatorSnapshot) -> None: ...


class FileStateStore:
    """One JSON file, replaced atomically (for a single-machine driver and for tests)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def load(self) -> CoordinatorSnapshot | None:
        try:
            return CoordinatorSnapshot.from_json(self.path.read_bytes())
        except FileNotFoundError:
            return None

    def save(self, snapshot: CoordinatorSnapshot) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, snapshot.to_json())
