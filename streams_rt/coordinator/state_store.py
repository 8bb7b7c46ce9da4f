"""The coordinator's small durable state, so generations keep increasing across a driver restart
and the members that come back keep their tasks.

A generation is saved before any member can fetch an assignment of it: a restarted coordinator
then never hands out a second, different assignment under a generation members already hold, and
knows every task it may have handed out."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from streams_rt.coordinator.group_record import GroupRecord, MemberRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CoordinatorSnapshot:
    """One JSON document per application: the generation, the protocol and the member records."""

    application_id: str
    generation: int
    protocol: str = ""
    members: tuple[MemberRecord, ...] = ()

    @classmethod
    def of(cls, application_id: str, record: GroupRecord) -> CoordinatorSnapshot:
        return cls(application_id, record.generation, record.protocol, record.members)

    @property
    def group(self) -> GroupRecord:
        return GroupRecord(self.generation, self.protocol, self.members)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "application_id": self.application_id, "generation": self.generation, "protocol": self.protocol,
                "members": [m.to_json() for m in self.members],
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> CoordinatorSnapshot:
        """Raises ValueError for anything but a snapshot; older snapshots without members read as empty."""
        try:
            raw = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"not a coordinator snapshot: {e}") from None
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("generation"), int)
            or not isinstance(raw.get("application_id"), str)
            or not isinstance(raw.get("protocol", ""), str)
            or not isinstance(raw.get("members", []), list)
        ):
            raise ValueError(f"not a coordinator snapshot: {data[:200]!r}")
        members = tuple(MemberRecord.from_json(m) for m in raw.get("members", []))
        return cls(raw["application_id"], raw["generation"], raw.get("protocol", ""), members)


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
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(snapshot.to_json())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
