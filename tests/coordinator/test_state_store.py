"""The coordinator's snapshot format and the file store (the Kafka store has its own test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams_rt.coordinator.group_record import MemberRecord
from streams_rt.coordinator.state_store import CoordinatorSnapshot, FileStateStore

MEMBER = MemberRecord("m-1", None, "EAGER", 1, 4000, 8000, 5, ("0_0",), ())


def test_file_store_round_trips_members(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path / "c.json")
    assert store.load() is None
    snapshot = CoordinatorSnapshot("app", 5, "EAGER", (MEMBER,))
    store.save(snapshot)
    assert FileStateStore(tmp_path / "c.json").load() == snapshot


def test_a_snapshot_without_members_reads_as_empty() -> None:
    assert CoordinatorSnapshot.from_json(b'{"application_id":"app","generation":4}') == CoordinatorSnapshot("app", 4)


@pytest.mark.parametrize("data", [b"{", b"[]", b'{"application_id":"app","generation":"4"}',
                                  b'{"application_id":"app","generation":4,"members":[{"id":1}]}'])
def test_anything_else_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="not a"):
        CoordinatorSnapshot.from_json(data)
