"""Restore on the real broker and real RocksDB: bulk restore through the shared changelog reader,
the listener, the stores' own offsets, and every reason to wipe."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import rocksdict
from confluent_kafka import KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state import ChangelogReader, StateConfig, StoreSpec, TaskState, WindowSpec
from streams_rt.state.errors import ChangelogError, StoreCorrupted
from streams_rt.state.restore import ConsoleRestoreListener, split_events
from streams_rt.state.stores import RocksDBKeyValueStore
from tests.state.child import SPECS, batch_writes, expected_kv
from tests.state.conftest import RecordingListener, StateHost

pytestmark = pytest.mark.broker

TASK = TaskId(0, 0)
COMMITS, PER_COMMIT = 4, 500

Reopen = Callable[[], tuple[TaskState, RecordingListener]]  # the `reopen` fixture


@pytest.fixture
def written(eos_config: StateConfig) -> StateConfig:
    """A task with committed writes, closed cleanly: its stores and checkpoint are on disk."""
    eos_config.ensure_changelog_topics([s.changelog(eos_config.application_id) for s in SPECS], 1)
    with StateHost(eos_config) as host:
        state = host.active(TASK, SPECS)
        for commit in range(COMMITS):
            for key, value in batch_writes(commit, PER_COMMIT):
                state.kv_store("kv").put(key, value)
            state.commit()
        state.close()
    return eos_config


@pytest.fixture
def reopen(written: StateConfig) -> Iterator[Reopen]:
    """Opens the written task again as active (once per test), on a fresh host."""
    hosts: list[StateHost] = []

    def open_again() -> tuple[TaskState, RecordingListener]:
        host = StateHost(written)
        hosts.append(host)
        return host.active(TASK, SPECS), host.listener

    yield open_again
    for host in hosts:
        host.close()


def _kv_contents(state: TaskState) -> dict[bytes, bytes]:
    return dict(state.kv_store("kv").all())


def _kv_store(config: StateConfig) -> RocksDBKeyValueStore:
    return RocksDBKeyValueStore("kv", config.state_dir / config.application_id / str(TASK))


def _kv_tp(config: StateConfig) -> TopicPartition:
    return TopicPartition(f"{config.application_id}-kv-changelog", 0)


def test_full_restore_equals_committed_state(written: StateConfig, reopen: Reopen) -> None:
    shutil.rmtree(written.state_dir / written.application_id / str(TASK) / "rocksdb")
    state, listener = reopen()
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    kinds = [e[0] for e in listener.events if e[1] == "kv"]
    assert kinds[0] == "start" and kinds[-1] == "end" and set(kinds[1:-1]) == {"batch"}
    assert listener.starts("kv") == [0]
    total = sum(len(batch_writes(c, PER_COMMIT)) for c in range(COMMITS))
    assert listener.restored("kv") == total
    assert sum(e[4] for e in listener.events if e[0] == "batch" and e[1] == "kv") == total
    assert state.offsets[_kv_tp(written)] == total - 1 + COMMITS - 1  # the last record (commit markers between)


def test_restart_reads_only_the_tail_after_the_stores_own_offset(written: StateConfig, reopen: Reopen) -> None:
    store = _kv_store(written)
    store.open()
    applied = store.applied_offset()
    store.close()
    assert applied is not None
    state, listener = reopen()
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    # Under exactly_once_v2 the store's offset is the last commit's marker (nothing to read: no restore
    # starts) or, if the marker was not written yet when the commit asked, the record before it (a
    # restore starts at the marker and reads nothing).
    assert listener.starts("kv") in ([], [applied + 1])
    assert listener.restored("kv") == 0


def test_a_store_behind_its_checkpoint_resumes_from_its_own_offset(
    written: StateConfig, reopen: Reopen, caplog: pytest.LogCaptureFixture
) -> None:
    """The checkpoint file says more than the store holds (e.g. a store directory put back from an
    older copy): the store's own offset, written with its data, decides where the restore resumes."""
    store = _kv_store(written)
    store.open()
    applied = store.applied_offset()
    assert applied is not None and applied > 100
    key, value = next(iter(expected_kv(COMMITS, PER_COMMIT).items()))
    store.apply_changelog([key], [value], applied - 100)  # the same data, an older own offset
    store.sync()
    store.close()
    with caplog.at_level(logging.INFO):
        state, listener = reopen()
    assert f"its own offset {applied - 100} is behind the checkpoint's" in caplog.text
    assert listener.starts("kv") == [applied - 99]
    assert 0 < listener.restored("kv") <= 100  # only the tail the store had not applied
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda text: "1\n" + text.split("\n", 1)[1], "unknown checkpoint version 1"),
        (lambda text: "0\n7\n" + text.split("\n", 2)[2], "expected 7 entries but found"),
        (lambda text: text[: len(text) // 2], "corrupt checkpoint"),
        (lambda text: "garbage", "version is not an integer"),
    ],
)
def test_a_corrupt_checkpoint_is_replaced_and_the_stores_own_offsets_decide(
    written: StateConfig, reopen: Reopen, caplog: pytest.LogCaptureFixture,
    damage: Callable[[str], str], why: str,
) -> None:
    path = written.state_dir / written.application_id / str(TASK) / ".checkpoint"
    before = path.read_text()
    path.write_text(damage(before))
    with caplog.at_level(logging.WARNING):
        state, listener = reopen()
    assert why in caplog.text and str(path) in caplog.text and "removing it" in caplog.text
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    assert listener.restored("kv") == 0  # the store knew what it held: nothing read again
    state.close()
    assert path.read_text() == before  # a fresh, valid checkpoint


def test_a_missing_checkpoint_costs_nothing(written: StateConfig, reopen: Reopen) -> None:
    (written.state_dir / written.application_id / str(TASK) / ".checkpoint").unlink()
    state, listener = reopen()
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT) and listener.restored("kv") == 0


def test_an_applied_offset_beyond_the_changelog_end_wipes(
    written: StateConfig, reopen: Reopen, caplog: pytest.LogCaptureFixture
) -> None:
    store = _kv_store(written)
    store.open()
    store.apply_changelog([b"garbage"], [b"!"], 1_000_000)  # claims records the changelog never had
    store.sync()
    store.close()
    with caplog.at_level(logging.WARNING):
        state, listener = reopen()
    assert "applied offset 1000000 is outside the changelog's range" in caplog.text
    assert state.kv_store("kv").get(b"garbage") is None
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    assert listener.starts("kv") == [0]


def test_data_without_an_applied_offset_wipes(
    written: StateConfig, reopen: Reopen, caplog: pytest.LogCaptureFixture
) -> None:
    """A store directory whose data no offset describes (e.g. left by an older release, or planted):
    it cannot be trusted, so it is rebuilt from the changelog."""
    path = written.state_dir / written.application_id / str(TASK) / "rocksdb" / "kv"
    shutil.rmtree(path)
    options = rocksdict.Options(raw_mode=True)
    db = rocksdict.Rdict(str(path), options, column_families={"default": options})
    db[b"garbage"] = b"!"
    db.close()
    with caplog.at_level(logging.WARNING):
        state, listener = reopen()
    assert "holds data but no applied changelog offset" in caplog.text
    assert state.kv_store("kv").get(b"garbage") is None
    assert _kv_contents(state) == expected_kv(COMMITS, PER_COMMIT)
    assert listener.starts("kv") == [0]


def test_window_restore_applies_retention(make_config: Callable[..., StateConfig]) -> None:
    minute = 60_000
    spec = StoreSpec("w", WindowSpec(retention_ms=10 * minute, window_size_ms=minute, segment_interval_ms=2 * minute))
    config = make_config("a")
    config.ensure_changelog_topics([spec.changelog(config.application_id)], 1)
    with StateHost(config) as host:
        state = host.active(TASK, [spec])
        for m in range(30):
            state.window_store("w").put(b"k", b"%d" % m, m * minute)
            state.commit()
        state.close()
    with StateHost(make_config("b")) as host:  # another host: restore from scratch
        state = host.active(TASK, [spec])
        windows = state.window_store("w")
        assert [s // minute for s, _ in windows.fetch(b"k", 0, 10**12)] == list(range(20, 30))
        assert windows.stream_time == 29 * minute
        # Records of expired segments were skipped, not written and dropped: far fewer than 30 applied.
        state.close()


@pytest.mark.parametrize("in_memory", [False, True])
def test_two_tasks_restore_at_once_on_one_reader(make_config: Callable[..., StateConfig], in_memory: bool) -> None:
    """The reader cuts one consume() batch into runs per partition and hands each to its store."""
    spec = StoreSpec("kv", in_memory=in_memory)
    tasks = [TaskId(0, 0), TaskId(0, 1)]
    config = make_config("a")
    config.ensure_changelog_topics([spec.changelog(config.application_id)], 2)
    with StateHost(config) as host:
        for task in tasks:
            state = host.active(task, [spec])
            for i in range(3000):
                state.kv_store("kv").put(b"%s-%d" % (str(task).encode(), i), b"v%d" % i)
            state.commit()
            state.close()
    with StateHost(make_config("b")) as host:
        states = [host.task(task, [spec]) for task in tasks]
        for state in states:
            state.open_active()
        assert host.reader.restoring == frozenset(tasks)
        host.reader.finish_restores()
        for task, state in zip(tasks, states, strict=True):
            expected = {b"%s-%d" % (str(task).encode(), i): b"v%d" % i for i in range(3000)}
            assert dict(state.kv_store("kv").all()) == expected
            state.close()
        assert host.listener.restored("kv") == 6000


def test_console_listener_logs_records_seconds_rate(caplog: pytest.LogCaptureFixture) -> None:
    listener = ConsoleRestoreListener(force=True)
    tp = TopicPartition("t", 0)
    with caplog.at_level(logging.INFO):
        listener.on_restore_start(tp, "s", 0, 10)
        listener.on_batch_restored(tp, "s", 9, 10)
        listener.on_restore_end(tp, "s", 10)
    assert "restored store s from t-0: 10 records in" in caplog.text and "records/s" in caplog.text


def _record(offset: int, key: bytes | None, value: bytes | None = b"v") -> Message:
    return Message(topic="t", partition=0, offset=offset, key=key, value=value)


def _event(offset: int, code: int) -> Message:
    return Message(topic="t", partition=0, offset=offset, error=KafkaError(code))


class _OneBatchConsumer:
    """A consumer stand-in that returns one prepared consume() batch: the reader's handling of
    events inside a batch, without a broker."""

    def __init__(self, batch: list[Message]) -> None:
        self.batches = [batch]
        self.seeks: list[tuple[str, int, int]] = []

    def seek(self, partition: KafkaTopicPartition) -> None:
        self.seeks.append((partition.topic, partition.partition, partition.offset))

    def incremental_assign(self, partitions: object) -> None: ...
    def incremental_unassign(self, partitions: object) -> None: ...
    def pause(self, partitions: object) -> None: ...
    def resume(self, partitions: object) -> None: ...
    def close(self) -> None: ...

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return self.batches.pop(0) if self.batches else []

    def get_watermark_offsets(self, partition: KafkaTopicPartition, timeout: float = -1,
                              cached: bool = False) -> tuple[int, int]:
        raise AssertionError("these tests give the reader its offsets")

    def offsets_for_times(self, partitions: list[KafkaTopicPartition],
                          timeout: float = -1) -> list[KafkaTopicPartition]:
        raise AssertionError("these tests give the reader its offsets")


class _Task:
    task = TaskId(0, 0)

    def __init__(self) -> None:
        self.completed = 0

    def restore_completed(self) -> None:
        self.completed += 1


def test_split_events_separates_records_from_eof_events_anywhere_in_a_batch() -> None:
    batch = [_record(3, b"a"), _event(4, KafkaError._PARTITION_EOF), _record(5, b"b")]
    records, eofs = split_events(batch)
    assert [m.offset() for m in records] == [3, 5] and [m.offset() for m in eofs] == [4]
    with pytest.raises(ChangelogError, match="consume failed"):
        split_events([_record(3, b"a"), _event(4, KafkaError._MSG_TIMED_OUT)])


def test_restore_applies_records_after_a_mid_batch_eof_event(tmp_path: Path) -> None:
    store = RocksDBKeyValueStore("kv", tmp_path)
    batch = [_record(0, b"a"), _event(1, KafkaError._PARTITION_EOF), _record(1, b"b", b"w"), _record(2, b"a", None)]
    reader, task = ChangelogReader(_OneBatchConsumer(batch)), _Task()
    tp = TopicPartition("t", 0)
    reader.restore(task, {tp: store}, {tp: 0}, {tp: 10})
    assert reader.poll() == {task.task: 3} and task.completed == 1  # the EOF event ended it
    assert store.applied_offset() == 2
    store.finish_restore()
    assert dict(store.all()) == {b"b": b"w"}
    store.close()


def test_a_failed_poll_rewinds_every_partition(tmp_path: Path) -> None:
    """A store that fails mid-batch (here: damaged, a FIFO in its directory) must not cost the
    other partitions the records of that batch: all are sought back to their read positions."""
    first, second = RocksDBKeyValueStore("a", tmp_path), RocksDBKeyValueStore("b", tmp_path)
    second.path.mkdir(parents=True)
    os.mkfifo(second.path / "CURRENT")
    batch = [_record(0, b"x"), Message(topic="t", partition=1, offset=4, key=b"y", value=b"v"),
             _record(1, b"z")]
    consumer = _OneBatchConsumer(batch)
    reader = ChangelogReader(consumer)
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    reader.restore(_Task(), {tp0: first, tp1: second}, {tp0: 0, tp1: 4}, {tp0: 9, tp1: 9})
    with pytest.raises(StoreCorrupted):
        reader.poll()
    assert sorted(consumer.seeks) == [("t", 0, 1), ("t", 1, 4)]  # past what was applied, no further
    first.close()


def test_an_empty_tail_opens_no_store(tmp_path: Path) -> None:
    store = RocksDBKeyValueStore("kv", tmp_path)
    reader, task = ChangelogReader(_OneBatchConsumer([_event(7, KafkaError._PARTITION_EOF)])), _Task()
    tp = TopicPartition("t", 0)
    reader.restore(task, {tp: store}, {tp: 6}, {tp: 7})
    reader.finish_restores()
    assert task.completed == 1 and not store.is_open  # only a commit marker: no bulk open, flush and reopen


def test_a_null_key_in_a_changelog_is_an_error_naming_its_offset(tmp_path: Path) -> None:
    store = RocksDBKeyValueStore("kv", tmp_path)
    consumer = _OneBatchConsumer([_record(0, b"a"), _record(1, None)])
    reader = ChangelogReader(consumer)
    tp = TopicPartition("t", 0)
    reader.restore(_Task(), {tp: store}, {tp: 0}, {tp: 5})
    with pytest.raises(ChangelogError, match="offset 1 has a null key"):
        reader.poll()
    assert consumer.seeks == [("t", 0, 0)]  # rewound: nothing of the failed batch is skipped
    store.close()


def test_a_restore_without_progress_is_an_error(tmp_path: Path) -> None:
    store = RocksDBKeyValueStore("kv", tmp_path)
    reader = ChangelogReader(_OneBatchConsumer([]), no_progress_timeout_s=0.0)
    tp = TopicPartition("t", 0)
    reader.restore(_Task(), {tp: store}, {tp: 0}, {tp: 5})
    with pytest.raises(ChangelogError, match="no progress"):
        reader.finish_restores()


def test_split_events_passes_over_a_broker_outage_and_keeps_the_records_around_it(
        caplog: pytest.LogCaptureFixture) -> None:
    """The consumer reports a lost connection as an event in the batch; it reconnects by itself, so
    the records before and after it are applied, not dropped with a failed batch."""
    caplog.set_level("INFO", logger="streams_rt.state.restore")
    batch = [_record(3, b"a"), _event(4, KafkaError._TRANSPORT), _record(4, b"b"),
             _event(5, KafkaError._ALL_BROKERS_DOWN)]
    records, eofs = split_events(batch)
    assert [m.offset() for m in records] == [3, 4] and eofs == []
    assert sum("reconnects by itself" in r.getMessage() for r in caplog.records) == 2
