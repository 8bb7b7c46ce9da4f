"""Key-value stores, on real RocksDB and in memory: operations, the per-commit overlay, the applied
changelog offset; RocksDB's options hook and bulk load."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import rocksdict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams_rt.state.config import StateConfig
from streams_rt.state.errors import StoreClosedError
from streams_rt.state.stores import InMemoryKeyValueStore, KeyValueStore, RocksDBKeyValueStore
from streams_rt.state.stores.kv import prefix_upper_bound
from streams_rt.state.stores.rocksdb_options import LEVEL0_SLOWDOWN_WRITES_TRIGGER, SUBCOMPACTIONS, RocksDBSettings
from streams_rt.state.stores.typed import TypedKeyValueStore
from tests.state.stores.conftest import RecordingChangelog


def test_operations_before_and_after_commit(kv: KeyValueStore, changelog: RecordingChangelog) -> None:
    kv.put(b"b", b"2")
    kv.put(b"a", b"1")
    kv.put(b"c", b"3")
    assert kv.get(b"a") == b"1"
    assert list(kv.range(b"a", b"c")) == [(b"a", b"1"), (b"b", b"2")]
    kv.commit(None)
    assert kv.delete(b"b") == b"2"
    assert kv.get(b"b") is None
    kv.put(b"ab", b"x")
    assert list(kv.all()) == [(b"a", b"1"), (b"ab", b"x"), (b"c", b"3")]
    assert list(kv.prefix_scan(b"a")) == [(b"a", b"1"), (b"ab", b"x")]
    kv.commit(None)
    assert list(kv.all()) == [(b"a", b"1"), (b"ab", b"x"), (b"c", b"3")]
    assert changelog.records == [
        (b"b", b"2"), (b"a", b"1"), (b"c", b"3"), (b"b", None), (b"ab", b"x")  # a delete is a tombstone
    ]


def test_only_committed_writes_survive_a_reopen(tmp_path: Path, changelog: RecordingChangelog) -> None:
    kv = RocksDBKeyValueStore("kv", tmp_path)
    kv.open()
    kv.attach_changelog(changelog)
    kv.put(b"kept", b"1")
    kv.commit(41)
    kv.put(b"lost", b"2")
    kv.delete(b"kept")
    kv.close()  # no commit: as after a crash
    kv.open()
    assert kv.get(b"kept") == b"1" and kv.get(b"lost") is None and kv.applied_offset() == 41
    kv.close()


def test_the_applied_offset_moves_with_commits_and_changelog_batches(kv: KeyValueStore) -> None:
    assert kv.applied_offset() is None
    kv.put(b"a", b"1")
    kv.commit(None)  # nothing was logged: the offset stays unknown
    assert kv.applied_offset() is None
    kv.put(b"b", b"2")
    kv.commit(7)
    assert kv.applied_offset() == 7
    kv.apply_changelog([b"c", b"a"], [b"3", None], 12)
    assert kv.applied_offset() == 12 and dict(kv.all()) == {b"b": b"2", b"c": b"3"}
    kv.wipe()
    assert kv.applied_offset() is None and kv.is_empty()


def test_memory_keeps_nothing_across_a_close() -> None:
    kv = InMemoryKeyValueStore("kv")
    kv.open()
    kv.apply_changelog([b"k"], [b"v"], 3)
    kv.close()
    kv.open()
    assert kv.is_empty() and kv.applied_offset() is None  # the changelog restores it


def test_approximate_count(kv: KeyValueStore) -> None:
    for i in range(1000):
        kv.put(b"%04d" % i, b"v")
    kv.commit(None)
    kv.sync()
    assert 900 <= kv.approximate_count() <= 1100


def test_prefix_upper_bound() -> None:
    assert prefix_upper_bound(b"ab") == b"ac"
    assert prefix_upper_bound(b"a\xff") == b"b"
    assert prefix_upper_bound(b"\xff\xff") is None


@pytest.mark.parametrize("in_memory", [False, True])
def test_writes_need_a_changelog(tmp_path: Path, in_memory: bool) -> None:
    store: KeyValueStore = InMemoryKeyValueStore("ro") if in_memory else RocksDBKeyValueStore("ro", tmp_path)
    store.open()
    with pytest.raises(StoreClosedError, match="read-only"):
        store.put(b"k", b"v")
    store.close()
    with pytest.raises(StoreClosedError, match="closed"):
        store.get(b"k")


keys = st.binary(min_size=1, max_size=3)
ops = st.lists(st.tuples(st.sampled_from(["put", "delete", "commit"]), keys, st.binary(max_size=3)), max_size=60)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(ops, keys, keys)
def test_matches_a_dict_model(kv: KeyValueStore, operations: list[tuple[str, bytes, bytes]], lo: bytes,
                              hi: bytes) -> None:
    kv.wipe()
    model: dict[bytes, bytes] = {}
    for op, key, value in operations:
        if op == "put":
            kv.put(key, value)
            model[key] = value
        elif op == "delete":
            assert kv.delete(key) == model.pop(key, None)
        else:
            kv.commit(None)
    assert list(kv.all()) == sorted(model.items())
    assert list(kv.range(lo, hi)) == sorted((k, v) for k, v in model.items() if lo <= k < hi)
    assert list(kv.prefix_scan(lo)) == sorted((k, v) for k, v in model.items() if k.startswith(lo))


class Utf8:
    def serialize(self, value: str | None) -> bytes | None:
        return None if value is None else value.encode()

    def deserialize(self, data: bytes | None) -> str | None:
        return None if data is None else data.decode()


def test_typed_view(kv: KeyValueStore) -> None:
    typed = TypedKeyValueStore(kv, Utf8(), Utf8())
    typed.put("k", "v")
    assert typed.get("k") == "v"
    assert list(typed.all()) == [("k", "v")]
    assert typed.delete("k") == "v" and typed.get("k") is None


class NoCompression:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def set_config(self, store_name: str, options: rocksdict.Options, configs: Mapping[str, Any]) -> None:
        self.calls.append(store_name)
        options.set_compression_type(rocksdict.DBCompressionType.none())
        options.set_write_buffer_size(8 << 20)


def test_config_setter_shapes_the_options(tmp_path: Path) -> None:
    setter = NoCompression()
    store = RocksDBKeyValueStore("custom", tmp_path, RocksDBSettings(config_setter=setter))
    store.open()
    store.close()
    assert setter.calls == ["custom"]
    options_file = sorted(store.path.glob("OPTIONS-*"))[-1].read_text()
    assert "compression=kNoCompression" in options_file
    assert "write_buffer_size=8388608" in options_file
    default = RocksDBKeyValueStore("default", tmp_path)
    default.open()
    default.close()
    assert "compression=kLZ4Compression" in sorted(default.path.glob("OPTIONS-*"))[-1].read_text()


class RecordsConfigs:
    def __init__(self) -> None:
        self.configs: list[dict[str, Any]] = []

    def set_config(self, store_name: str, options: rocksdict.Options, configs: Mapping[str, Any]) -> None:
        self.configs.append(dict(configs))


def test_the_rocksdb_keys_bound_every_store_and_the_setter_gets_the_properties(tmp_path: Path) -> None:
    recorder = RecordsConfigs()
    props = {"application.id": "a", "bootstrap.servers": "x:1", "rocksdb.block.cache.bytes": str(2 << 20),
             "rocksdb.write.buffer.bytes": 1 << 20, "rocksdb.max.write.buffers": "5", "rocksdb.config.setter": recorder}
    settings = StateConfig.from_properties(props).rocksdb
    store, other = RocksDBKeyValueStore("sized", tmp_path, settings), RocksDBKeyValueStore("other", tmp_path, settings)
    store.open()
    other.open()
    # One cache for every store of the host: the block cache, with the memtables charged to it.
    assert store.db.property_int_value("rocksdb.block-cache-capacity") == (2 << 20) + 5 * (1 << 20)
    for i in range(2000):
        store.db[b"k%06d" % i] = b"v" * 200
        other.db[b"k%06d" % i] = b"v" * 200
    assert settings.write_buffers.get_buffer_size() == 5 * (1 << 20)
    assert 0 < settings.write_buffers.get_usage() <= 5 * (1 << 20)  # both stores' memtables, one budget
    assert store.db.property_int_value("rocksdb.block-cache-usage") == other.db.property_int_value(
        "rocksdb.block-cache-usage")
    store.close()
    other.close()
    options_file = sorted(store.path.glob("OPTIONS-*"))[-1].read_text()
    assert "write_buffer_size=1048576" in options_file and "max_write_buffer_number=5" in options_file
    # Index and filter blocks are read into the cache, so they count against it (RocksDB otherwise
    # keeps them outside any bound, growing with the data).
    assert "cache_index_and_filter_blocks=true" in options_file
    assert recorder.configs == [props, props]  # Kafka hands its setter the application's properties as given


def test_a_setter_named_by_its_class_is_instantiated(tmp_path: Path) -> None:
    config = StateConfig.from_properties({"application.id": "a", "bootstrap.servers": "x:1",
                                          "rocksdb.config.setter": f"{__name__}:NoCompression"})
    assert isinstance(config.rocksdb.config_setter, NoCompression)
    store = RocksDBKeyValueStore("by-class", tmp_path, config.rocksdb)
    store.open()
    store.close()
    assert "compression=kNoCompression" in sorted(store.path.glob("OPTIONS-*"))[-1].read_text()


def _level0_files(store: RocksDBKeyValueStore) -> int:
    count = store.db.property_value("rocksdb.num-files-at-level0")
    assert count is not None
    return int(count)


def test_finishing_a_restore_compacts_a_crowded_level0(tmp_path: Path) -> None:
    """A restore that leaves L0 at RocksDB's write-slowdown trigger is compacted before processing,
    so the task's first commits do not stall; the data survives and the processing options return."""
    store = RocksDBKeyValueStore("bulk", tmp_path)
    store.begin_restore()  # bulk options, auto compactions off: every flush adds an L0 file
    for i in range(LEVEL0_SLOWDOWN_WRITES_TRIGGER + 2):
        store.db[i.to_bytes(4, "big")] = b"v%d" % i
        store.db.flush()
    assert _level0_files(store) == LEVEL0_SLOWDOWN_WRITES_TRIGGER + 2
    store.finish_restore()
    assert _level0_files(store) < LEVEL0_SLOWDOWN_WRITES_TRIGGER
    assert [store.get(i.to_bytes(4, "big")) for i in (0, LEVEL0_SLOWDOWN_WRITES_TRIGGER + 1)] == [
        b"v0", b"v%d" % (LEVEL0_SLOWDOWN_WRITES_TRIGGER + 1)]
    options_file = sorted(store.path.glob("OPTIONS-*"))[-1].read_text()
    assert "memtable_factory=SkipListFactory" in options_file
    # What is left in L0 is compacted after the reopen, split by key range over the cores.
    assert f"max_subcompactions={SUBCOMPACTIONS}" in options_file
    store.close()
