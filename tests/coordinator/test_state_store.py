"""The coordinator's snapshot format and the file store (the Kafka store has its own test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams_rt.coordinator.group_record import GroupRecord, MemberRecord
from streams_rt.coordinator.state_store import CoordinatorSnapshot, FileStateStore
from streams_rt.protocol import RebalanceProtocol

MEMBER = MemberRecord("m-1", None, RebalanceProtocol.EAGER, 1, 4000, 8000, 5, ("0_0",), ())


def test_file_store_round_trips_members(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path / "c.json")
    assert store.load() is None
    snapshot = CoordinatorSnapshot("app", GroupRecord(5, RebalanceProtocol.EAGER, (MEMBER,)))
    store.save(snapshot)
    assert FileStateStore(tmp_path / "c.json").load() == snapshot


def test_a_snapshot_without_members_reads_as_empty() -> None:
    snapshot = CoordinatorSnapshot.from_json(b'{"application_id":"app","generation":4}')
    assert snapshot == CoordinatorSnapshot("app", GroupRecord(4))


@pytest.mark.parametrize("data", [b"{", b"[]", b'{"application_id":"app","generation":"4"}',
                                  b'{"application_id":"app","generation":4,"members":[{"id":1}]}',
                                  b'{"application_id":"app","generation":4,"protocol":"eager"}',
                                  b'{"application_id":"app","generation":4,"protocol":null}'])
def test_anything_else_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="not a"):
        CoordinatorSnapshot.from_json(data)


def test_the_document_format_is_unchanged() -> None:
    """Snapshots saved before the snapshot held a GroupRecord still load, and are written the same."""
    old = (b'{"application_id":"app","generation":5,"protocol":"EAGER","members":[{"id":"m-1","instance":null,'
           b'"protocol":"EAGER","capacity":1,"session_ms":4000,"rebalance_ms":8000,"generation":5,'
           b'"active":["0_0"],"standby":[]}]}')
    snapshot = CoordinatorSnapshot.from_json(old)
    assert snapshot == CoordinatorSnapshot("app", GroupRecord(5, RebalanceProtocol.EAGER, (MEMBER,)))
    assert snapshot.to_json() == old
    unknown_member_protocol = old.replace(b'"protocol":"EAGER","capacity"', b'"protocol":"","capacity"')
    with pytest.raises(ValueError, match="not a member record"):
        CoordinatorSnapshot.from_json(unknown_member_protocol)


def test_a_failed_save_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileStateStore(tmp_path / "c.json")
    store.save(CoordinatorSnapshot("app", GroupRecord(1)))

    def fail(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", fail)
    with pytest.raises(OSError, match="disk full"):
        store.save(CoordinatorSnapshot("app", GroupRecord(2)))
    monkeypatch.undo()
    assert store.load() == CoordinatorSnapshot("app", GroupRecord(1))
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]
