"""Restore on the real broker and real RocksDB: bulk restore, listener, and every reason to wipe."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable

import pytest
import rocksdict
from confluent_kafka import KafkaError, Message

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state import StateConfig, StateDirectory, StoreSpec, TaskState, WindowSpec
from streams_rt.state.errors import ChangelogError
from streams_rt.state.restore import ConsoleRestoreListener, restore_store, split_events
from streams_rt.state.stores.kv import KeyValueStore
from tests.state.child import SPECS, batch_writes, expected_kv
from tests.state.conftest import RecordingListener

pytestmark = pytest.mark.broker

TASK = TaskId(0, 0)
COMMITS, PER_COMMIT = 4, 500


def _write(config: StateConfig, directory: StateDirectory) -> None:
    config.ensure_changelog_topics([s.changelog(config.application_id) for s in SPECS], 1)
    state = TaskState(config, directory, TASK, SPECS)
    state.open_active()
    for commit in range(COMMITS):
        for key, value in batch_writes(commit, PER_COMMIT):
            state.store("kv").put(key, value)
        state.commit()
    state.close()


def _reopen(config: StateConfig, directory: StateDirectory) -> tuple[TaskState, RecordingListener]:
    listener = RecordingListener()
    state = TaskState(config, directory, TASK, SPECS, listener=listener)
    state.open_active()
    return state, listener


@pytest.fixture
def written(eos_config: StateConfig, state_directory: StateDirectory) -> StateDirectory:
    _write(eos_config, state_directory)
    return state_directory


def _kv_contents(state: TaskState) -> dict[bytes, bytes]:
    return dict(state.store("kv").all())


def _plant_garbage(directory: StateDirectory) -> None:
    """A key no changelog record ever wrote: it survives unless the store is really wiped."""
    path = directory.task_dir(TASK) / "rocksdb" / "kv"
    db = rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True), column_families={"default": rocksdict.Options(raw_mode=True)})
    db[b"garbage"] = b"!"
    db.close()


def test_full_restore_equals_committed_state(eos_config: StateConfig, written: StateDirectory) -> None:
    shutil.rmtree(written.task_dir(TASK) / "rocksdb")
    written.checkpoint_for(TASK).delete()
    state, listener = _reopen(eos_config, written)
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    kinds = [e[0] for e in listener.events if e[1] == "kv"]
    assert kinds[0] == "start" and kinds[-1] == "end" and set(kinds[1:-1]) == {"batch"}
    assert listener.starts("kv") == [0]
    total = sum(len(batch_writes(c, PER_COMMIT)) for c in range(COMMITS))
    assert listener.restored("kv") == total
    assert sum(e[4] for e in listener.events if e[0] == "batch" and e[1] == "kv") == total
    state.close()


def test_restart_reads_only_the_tail(eos_config: StateConfig, written: StateDirectory) -> None:
    checkpointed = written.checkpoint_for(TASK).read()
    state, listener = _reopen(eos_config, written)
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    tp = TopicPartition(f"{eos_config.application_id}-kv-changelog", 0)
    assert listener.starts("kv") == [checkpointed[tp] + 1]  # exactly_once_v2: the last commit's marker is left
    assert listener.restored("kv") == 0
    state.close()


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda text: "1\n" + text.split("\n", 1)[1], "unknown checkpoint version 1"),
        (lambda text: "0\n7\n" + text.split("\n", 2)[2], "expected 7 entries but found"),
        (lambda text: text[: len(text) // 2], "corrupt checkpoint"),
        (lambda text: "garbage", "version is not an integer"),
    ],
)
def test_corrupt_checkpoint_wipes_and_restores(
    eos_config: StateConfig, written: StateDirectory, caplog: pytest.LogCaptureFixture,
    damage: Callable[[str], str], why: str,
) -> None:
    path = written.checkpoint_for(TASK).path
    path.write_text(damage(path.read_text()))
    _plant_garbage(written)
    with caplog.at_level(logging.WARNING):
        state, listener = _reopen(eos_config, written)
    assert why in caplog.text and str(path) in caplog.text and "wiping its stores" in caplog.text
    assert state.store("kv").get(b"garbage") is None
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    assert listener.starts("kv") == [0]
    state.close()
    assert written.checkpoint_for(TASK).read()  # a fresh, valid checkpoint


def test_checkpoint_beyond_the_changelog_end_wipes(
    eos_config: StateConfig, written: StateDirectory, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = written.checkpoint_for(TASK)
    offsets = checkpoint.read()
    checkpoint.write({tp: offset + 1_000_000 for tp, offset in offsets.items()})
    _plant_garbage(written)
    with caplog.at_level(logging.WARNING):
        state, listener = _reopen(eos_config, written)
    assert "outside the changelog's range" in caplog.text
    assert state.store("kv").get(b"garbage") is None
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    assert listener.starts("kv") == [0]
    state.close()


def test_missing_checkpoint_restores_from_the_beginning(
    eos_config: StateConfig, written: StateDirectory, caplog: pytest.LogCaptureFixture
) -> None:
    written.checkpoint_for(TASK).delete()
    _plant_garbage(written)
    with caplog.at_level(logging.WARNING):
        state, listener = _reopen(eos_config, written)
    assert "no checkpointed offset" in caplog.text
    assert state.store("kv").get(b"garbage") is None
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    assert listener.starts("kv") == [0]
    state.close()


def test_window_restore_applies_retention(make_config: Callable[..., StateConfig]) -> None:
    minute = 60_000
    spec = StoreSpec("w", WindowSpec(retention_ms=10 * minute, window_size_ms=minute, segment_interval_ms=2 * minute))
    config = make_config("a")
    config.ensure_changelog_topics([spec.changelog(config.application_id)], 1)
    with StateDirectory(config.state_dir, config.application_id) as directory:
        state = TaskState(config, directory, TASK, [spec])
        state.open_active()
        for m in range(30):
            state.store("w").put(b"k", b"%d" % m, m * minute)
            state.commit()
        state.close()
    restored_config = make_config("b")  # another host: restore from scratch
    with StateDirectory(restored_config.state_dir, restored_config.application_id) as directory:
        state = TaskState(restored_config, directory, TASK, [spec])
        state.open_active()
        windows = state.store("w")
        assert [s // minute for s, _ in windows.fetch(b"k", 0, 10**12)] == list(range(20, 30))
        assert min(windows._segments) >= 9  # expired segments were dropped while restoring
        state.close()


def test_console_listener_logs_records_seconds_rate(caplog: pytest.LogCaptureFixture) -> None:
    listener = ConsoleRestoreListener(force=True)
    tp = TopicPartition("t", 0)
    with caplog.at_level(logging.INFO):
        listener.on_restore_start(tp, "s", 0, 10)
        listener.on_batch_restored(tp, "s", 9, 10)
        listener.on_restore_end(tp, "s", 10)
    assert "restored store s from t-0: 10 records in" in caplog.text and "records/s" in caplog.text


def _record(offset: int, key: bytes, value: bytes | None = b"v") -> Message:
    return Message(topic="t", partition=0, offset=offset, key=key, value=value)


def _event(offset: int, code: int) -> Message:
    return Message(topic="t", partition=0, offset=offset, error=KafkaError(code))


class _OneBatchConsumer:
    """A restore consumer stand-in that returns one prepared consume() batch."""

    def __init__(self, batch: list[Message]) -> None:
        self.batches = [batch]

    def assign(self, partitions: object) -> None: ...
    def unassign(self) -> None: ...

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return self.batches.pop(0) if self.batches else []


def test_split_events_separates_records_from_eof_events_anywhere_in_a_batch() -> None:
    batch = [_record(3, b"a"), _event(4, KafkaError._PARTITION_EOF), _record(5, b"b")]
    records, eofs = split_events(batch)
    assert [m.offset() for m in records] == [3, 5] and [m.offset() for m in eofs] == [4]
    with pytest.raises(ChangelogError, match="consume failed"):
        split_events([_record(3, b"a"), _event(4, KafkaError._MSG_TIMED_OUT)])


def test_restore_applies_records_after_a_mid_batch_eof_event(tmp_path) -> None:  # noqa: ANN001
    store = KeyValueStore("kv", tmp_path)
    batch = [_record(0, b"a"), _event(1, KafkaError._PARTITION_EOF), _record(1, b"b", b"w"), _record(2, b"a", None)]
    last = restore_store(_OneBatchConsumer(batch), store, TopicPartition("t", 0), 0, 10)  # type: ignore[arg-type]
    assert last == 2 and store.bulk_loading
    store.end_bulk_load()
    assert dict(store.all()) == {b"b": b"w"}
    store.close()


def test_an_empty_tail_opens_no_store(tmp_path) -> None:  # noqa: ANN001
    store = KeyValueStore("kv", tmp_path)
    consumer = _OneBatchConsumer([_event(7, KafkaError._PARTITION_EOF)])
    assert restore_store(consumer, store, TopicPartition("t", 0), 6, 7) is None  # type: ignore[arg-type]
    assert not store.is_open  # only a commit marker: no bulk open, flush and reopen
