"""Damaged RocksDB files under real stores, without a broker: every read checks RocksDB's status (a
scan that corruption stops raises, it never answers short), damage found in use is marked for the
next open, the error keeps nothing open, and what an open finds is a typed error naming the file."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from streams_rt.kafka.jvm import REPO_ROOT
from streams_rt.state.errors import StatePathError, StoreCorrupted
from streams_rt.state.stores import KeyValueStore, RocksDBKeyValueStore, RocksDBWindowStore
from streams_rt.state.stores.rocksdb import DAMAGE_MARKER
from tests.state.disk_damage import (
    delete,
    empty,
    flip_byte,
    replace_with_directory,
    replace_with_fifo,
    rocksdb_file,
    truncate,
)
from tests.state.stores.conftest import MINUTE

KEYS = 1500

Damaged = tuple[RocksDBKeyValueStore, dict[bytes, bytes], Path]  # store, its data, the flipped SST


def _key(i: int) -> bytes:
    return b"key-%05d" % i


def _restored_kv(task_dir: Path) -> tuple[RocksDBKeyValueStore, dict[bytes, bytes]]:
    """A store restored with KEYS incompressible entries (so they span many blocks), closed."""
    rng = random.Random(7)
    expected = {_key(i): rng.randbytes(50) for i in range(KEYS)}
    store = RocksDBKeyValueStore("kv", task_dir)
    store.begin_restore()
    store.apply_changelog(list(expected), list(expected.values()), KEYS - 1)
    store.finish_restore()
    store.close()
    return store, expected


@pytest.fixture
def damaged(tmp_path: Path) -> Damaged:
    """A restored store with one byte flipped a third into its data's SST file, opened again."""
    store, expected = _restored_kv(tmp_path / "0_4")
    sst = rocksdb_file(store.path, "SST")
    flip_byte(sst, 1 / 3)
    store.open()
    return store, expected, sst


def _assert_names(error: StoreCorrupted, store: RocksDBKeyValueStore, path: Path) -> None:
    assert (error.store, error.task, error.path) == ("kv", store.path.parent.parent.name, path)
    assert str(path) in str(error) and "kv" in str(error)


def _all_with_uncommitted_writes(store: KeyValueStore) -> Iterable[tuple[bytes, bytes]]:
    store.put(_key(3), b"new")  # the overlay is merged in: another code path
    return store.all()


SCANS: dict[str, Callable[[KeyValueStore], Iterable[tuple[bytes, bytes]]]] = {
    "all": lambda store: store.all(),
    "range": lambda store: store.range(_key(100), _key(1400)),
    "prefix_scan": lambda store: store.prefix_scan(b"key-0"),
    "all with uncommitted writes": _all_with_uncommitted_writes,
}


@pytest.mark.parametrize("scan", SCANS)
def test_a_scan_over_a_damaged_block_raises_naming_the_file(damaged: Damaged, scan: str) -> None:
    store, _, sst = damaged
    store.attach_changelog(lambda key, value: None)
    with pytest.raises(StoreCorrupted, match="checksum mismatch") as caught:
        list(SCANS[scan](store))
    _assert_names(caught.value, store, sst)
    store.close()


def test_point_gets_answer_right_or_raise_and_scans_elsewhere_are_exact(damaged: Damaged) -> None:
    store, expected, sst = damaged
    unreadable = []
    for key, value in expected.items():
        try:
            assert store.get(key) == value
        except StoreCorrupted as exc:
            _assert_names(exc, store, sst)
            unreadable.append(key)
    assert unreadable, "the flipped byte hit no data block"
    after = _key(int(unreadable[-1][4:]) + 1)
    assert list(store.range(after, None)) == [(k, v) for k, v in expected.items() if k >= after]
    store.close()


def test_damage_found_in_use_is_marked_for_the_next_open(damaged: Damaged) -> None:
    store, _, sst = damaged
    with pytest.raises(StoreCorrupted):
        list(store.all())
    store.close()
    assert (store.path / DAMAGE_MARKER).exists()
    with pytest.raises(StoreCorrupted, match="found damaged in use") as caught:
        store.open()  # the damage lies where an open does not look: only the marker tells
    _assert_names(caught.value, store, sst)
    store.wipe()
    store.open()
    assert store.is_empty() and store.applied_offset() is None
    store.close()


def test_the_error_keeps_no_rocksdb_open(damaged: Damaged) -> None:
    """A host reopens while it still holds the error: the error's frames must not keep RocksDB (and
    its LOCK) alive, or the reopen fails."""
    store, _, _ = damaged
    errors: list[StoreCorrupted] = []
    reads: tuple[Callable[[], object], ...] = (
        lambda: list(store.range(_key(0), _key(KEYS))), lambda: [store.get(k) for k in map(_key, range(KEYS))],
    )
    for read in reads:
        try:
            read()
        except StoreCorrupted as exc:
            errors.append(exc)
    assert len(errors) == 2
    store.close()
    store.wipe()
    store.open()
    store.apply_changelog([b"k"], [b"v"], 0)
    assert list(store.all()) == [(b"k", b"v")]
    store.close()


def test_a_damaged_window_segment_fails_fetches(tmp_path: Path) -> None:
    rng = random.Random(3)
    windows = RocksDBWindowStore("win", tmp_path / "1_0", retention_ms=60 * MINUTE, window_size_ms=MINUTE)
    windows.begin_restore()
    keys = [b"k%04d" % i for i in range(2000)]
    windows.apply_changelog([k + (5 * MINUTE).to_bytes(8, "big") for k in keys],
                            [rng.randbytes(50) for _ in keys], 1999)
    windows.finish_restore()
    windows.close()
    flip_byte(rocksdb_file(windows.path, "SST"), 1 / 3)
    windows.open()
    with pytest.raises(StoreCorrupted, match="checksum mismatch"):
        windows.fetch_all()
    with pytest.raises(StoreCorrupted, match="checksum mismatch"):
        for key in keys:
            windows.fetch(key, 0, 10 * MINUTE)
    windows.close()


OPEN_DAMAGE: dict[str, tuple[str, Callable[[Path], None]]] = {
    "SST cut short": ("SST", truncate),
    "SST deleted": ("SST", delete),
    "MANIFEST emptied": ("MANIFEST", empty),
    "MANIFEST byte flipped": ("MANIFEST", flip_byte),
    "CURRENT emptied": ("CURRENT", empty),
    "CURRENT a directory": ("CURRENT", replace_with_directory),
}


@pytest.mark.parametrize("case", OPEN_DAMAGE)
def test_damage_an_open_finds_is_typed_and_names_the_file(tmp_path: Path, case: str) -> None:
    store, _ = _restored_kv(tmp_path / "0_1")
    kind, damage = OPEN_DAMAGE[case]
    target = rocksdb_file(store.path, kind)
    damage(target)
    with pytest.raises(StoreCorrupted) as caught:
        store.open()
    _assert_names(caught.value, store, target)
    assert not store.is_open
    store.wipe()
    store.open()
    assert store.is_empty()
    store.close()


_OPEN_IN_CHILD = """
import json, sys
from pathlib import Path
from streams_rt.state.errors import StateError
from streams_rt.state.stores import RocksDBKeyValueStore
store = RocksDBKeyValueStore("kv", Path(sys.argv[1]))
try:
    store.open()
    print(json.dumps({"opened": True}))
except StateError as exc:
    print(json.dumps({"error": type(exc).__name__, "path": str(exc.path)}))
"""


def _open_in_child(task_dir: Path) -> dict[str, object]:
    """Open the store in a child process: a regression that blocks on a FIFO fails by timeout."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run([sys.executable, "-c", _OPEN_IN_CHILD, str(task_dir)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    outcome: dict[str, object] = json.loads(done.stdout)
    return outcome


@pytest.mark.parametrize("name", ["CURRENT", "OPTIONS", "rocksdict-config.json"])
def test_a_fifo_in_the_store_directory_is_damage_and_blocks_nothing(tmp_path: Path, name: str) -> None:
    store, _ = _restored_kv(tmp_path / "0_2")
    target = rocksdb_file(store.path, name) if name in ("CURRENT", "OPTIONS") else store.path / name
    replace_with_fifo(target)
    assert _open_in_child(store.path.parent.parent) == {"error": "StoreCorrupted", "path": str(target)}


def test_a_file_where_the_store_directory_must_be_is_a_path_error(tmp_path: Path) -> None:
    store = RocksDBKeyValueStore("kv", tmp_path / "0_3")
    store.path.parent.mkdir(parents=True)
    store.path.write_text("not a store")
    with pytest.raises(StatePathError) as caught:
        store.open()
    assert caught.value.path == store.path
    with pytest.raises(StatePathError):
        store.wipe()
    assert store.path.read_text() == "not a store"  # named, never deleted


@pytest.mark.parametrize("lengths", [(0, 1, 31, 32, 33), (64, 100, 500, 1000)])
def test_scans_of_every_length_match_the_data(tmp_path: Path, lengths: tuple[int, ...]) -> None:
    """Short scans (a raw iterator) and long ones (items() after it, then the probe) alike, with
    and without uncommitted writes."""
    store, expected = _restored_kv(tmp_path / "0_5")
    store.open()
    store.attach_changelog(lambda key, value: None)
    keys = sorted(expected)
    for start in (0, 7, 200):
        for length in lengths:
            end = keys[start + length] if start + length < len(keys) else None
            want = [(k, expected[k]) for k in keys[start:start + length]] if end else \
                [(k, expected[k]) for k in keys[start:]]
            assert list(store.range(keys[start], end)) == want
    store.put(keys[40], b"changed")
    store.delete(keys[41])
    expected[keys[40]] = b"changed"
    del expected[keys[41]]
    assert list(store.all()) == sorted(expected.items())
    store.close()


def test_scans_stay_exact_when_their_bounds_are_freed_before_they_are_read(tmp_path: Path) -> None:
    """rocksdict's iterators point at the upper bound's bytes: a scan must keep them alive (before,
    prefix scans created first and read later answered wrongly, short or long)."""
    store, expected = _restored_kv(tmp_path / "0_6")
    store.open()
    scans = [(i, store.prefix_scan(b"key-%04d" % i)) for i in range(0, 150, 3)]
    garbage = [bytes([i % 256]) * 17 for i in range(50_000)]  # reuse the freed memory
    for i, scan in scans:
        prefix = b"key-%04d" % i
        assert list(scan) == [(k, v) for k, v in expected.items() if k.startswith(prefix)]
    assert garbage
    store.close()


_COMMIT_THEN_DIE = """
import os, signal, sys
from pathlib import Path
from streams_rt.state.stores import RocksDBKeyValueStore
store = RocksDBKeyValueStore("kv", Path(sys.argv[1]))
store.begin_restore()
store.apply_changelog([b"key-%05d" % i for i in range(1500)], [b"v0"] * 1500, 1499)
store.finish_restore()
store.attach_changelog(lambda key, value: None)
for commit in range(30):
    for i in range(commit * 50, commit * 50 + 100):
        store.put(b"key-%05d" % (1500 + i), b"c%d" % commit)
    store.delete(b"key-%05d" % commit)
    store.commit(1499 + 101 * (commit + 1))
    store.sync()
    if commit == 15:
        store.db.flush()  # half the commits in an SST file, the rest only in the WAL
os.kill(os.getpid(), signal.SIGKILL)
"""


def _committed_states() -> dict[int, dict[bytes, bytes]]:
    """What _COMMIT_THEN_DIE's store holds after each changelog offset it commits."""
    state = {b"key-%05d" % i: b"v0" for i in range(1500)}
    states = {1499: dict(state)}
    for commit in range(30):
        for i in range(commit * 50, commit * 50 + 100):
            state[b"key-%05d" % (1500 + i)] = b"c%d" % commit
        state.pop(b"key-%05d" % commit, None)
        states[1499 + 101 * (commit + 1)] = dict(state)
    return states


@pytest.mark.parametrize("kind", ["MANIFEST", "WAL"])
def test_every_cut_of_the_manifest_or_the_wal_refuses_or_opens_consistent(tmp_path: Path, kind: str) -> None:
    """A store left by kill -9, its MANIFEST or WAL cut at many lengths: each open either refuses
    (StoreCorrupted) or opens a state that is exactly what was committed up to some offset at or
    after the store's own offset, so a restore from that offset + 1 loses nothing."""
    built = tmp_path / "0_7"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    child = subprocess.run([sys.executable, "-c", _COMMIT_THEN_DIE, str(built)], cwd=REPO_ROOT, env=env,
                           capture_output=True, timeout=60)
    assert child.returncode == -9, child.stderr
    states = _committed_states()
    source = rocksdb_file(built / "rocksdb" / "kv", kind)
    size = source.stat().st_size
    outcomes = {"refused": 0, "consistent": 0}
    for cut in sorted({*range(0, size, max(1, size // 60)), size - 1}):
        work = tmp_path / f"cut-{cut}" / "0_7"
        shutil.copytree(built, work)
        truncate(work / "rocksdb" / "kv" / source.name, cut / size)
        store = RocksDBKeyValueStore("kv", work)
        try:
            store.open()
        except StoreCorrupted:
            outcomes["refused"] += 1
            continue
        applied, data = store.applied_offset(), dict(store.all())
        store.close()
        assert applied is not None, f"cut at {cut}: no offset"
        assert any(offset >= applied and held == data for offset, held in states.items()), f"cut at {cut}"
        outcomes["consistent"] += 1
        shutil.rmtree(work.parent)
    assert outcomes["refused"] > 0, outcomes
