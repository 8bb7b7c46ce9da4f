"""A consume() batch mixing several changelogs is cut into runs and applied in order: every store
ends as its own records applied one by one would leave it (property test, no broker)."""

from __future__ import annotations

from confluent_kafka import KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.state import ChangelogReader
from streams_rt.state.stores.memory import InMemoryKeyValueStore

# Two changelogs with the same partition numbers: a task with two stores reads both partition 0s.
TPS = [TopicPartition(topic, partition) for topic in ("app-a-changelog", "app-b-changelog") for partition in (0, 1)]


class _Consumer:
    def __init__(self, batch: list[Message]) -> None:
        self.batch = batch

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        batch, self.batch = self.batch, []
        return batch

    def incremental_assign(self, partitions: list[KafkaTopicPartition]) -> None: ...
    def incremental_unassign(self, partitions: list[KafkaTopicPartition]) -> None: ...
    def pause(self, partitions: list[KafkaTopicPartition]) -> None: ...
    def resume(self, partitions: list[KafkaTopicPartition]) -> None: ...
    def seek(self, partition: KafkaTopicPartition) -> None: ...
    def close(self) -> None: ...

    def get_watermark_offsets(self, partition: KafkaTopicPartition, timeout: float = -1,
                              cached: bool = False) -> tuple[int, int]:
        raise AssertionError("the test gives the reader its offsets")

    def offsets_for_times(self, partitions: list[KafkaTopicPartition],
                          timeout: float = -1) -> list[KafkaTopicPartition]:
        raise AssertionError("the test gives the reader its offsets")


class _Task:
    def __init__(self, task: TaskId) -> None:
        self.task = task
        self.completed = False

    def restore_completed(self) -> None:
        self.completed = True


records = st.lists(st.tuples(st.sampled_from(TPS), st.sampled_from([b"k1", b"k2", b"k3"]),
                             st.sampled_from([b"v1", b"v2", None])), max_size=60)


@given(records, st.booleans())
@settings(max_examples=200, deadline=None)
def test_every_store_ends_as_its_records_applied_in_order(
        written: list[tuple[TopicPartition, bytes, bytes | None]], eof_in_between: bool) -> None:
    next_offset = dict.fromkeys(TPS, 0)
    batch: list[Message] = []
    expected: dict[TopicPartition, dict[bytes, bytes]] = {tp: {} for tp in TPS}
    for i, (tp, key, value) in enumerate(written):
        batch.append(Message(topic=tp.topic, partition=tp.partition, offset=next_offset[tp], key=key, value=value))
        next_offset[tp] += 1
        if value is None:
            expected[tp].pop(key, None)
        else:
            expected[tp][key] = value
        if eof_in_between and i == len(written) // 2:
            batch.append(Message(topic=tp.topic, partition=tp.partition, offset=next_offset[tp],
                                 error=KafkaError(KafkaError._PARTITION_EOF)))
    stores = {tp: InMemoryKeyValueStore(f"{tp}") for tp in TPS}
    tasks = {p: _Task(TaskId(0, p)) for p in (0, 1)}
    reader = ChangelogReader(_Consumer(batch))
    for p, task in tasks.items():
        mine = {tp: store for tp, store in stores.items() if tp.partition == p}
        reader.restore(task, mine, dict.fromkeys(mine, 0), {tp: next_offset[tp] + 1 for tp in mine})
    applied = reader.poll()
    assert sum(applied.values()) == len(written)
    for tp, store in stores.items():
        if next_offset[tp]:
            assert dict(store.all()) == expected[tp]
            assert store.applied_offset() == next_offset[tp] - 1
        assert reader.positions(tasks[tp.partition].task).get(tp, next_offset[tp]) == next_offset[tp]
    reader.close()


class _LoggedStore(InMemoryKeyValueStore):
    def __init__(self, name: str, log: list[str]) -> None:
        super().__init__(name)
        self.log = log

    def start_sync(self) -> None:
        self.log.append(f"flush {self.name}")


class _LoggedTask(_Task):
    def __init__(self, task: TaskId, log: list[str]) -> None:
        super().__init__(task)
        self.log = log

    def restore_completed(self) -> None:
        self.log.append(f"completed {self.task}")


def test_stores_whose_restores_end_in_one_poll_all_start_flushing_before_any_task_is_told() -> None:
    log: list[str] = []
    tps = [TopicPartition("app-a-changelog", p) for p in (0, 1)]
    batch = [Message(topic=tp.topic, partition=tp.partition, offset=0, key=b"k", value=b"v") for tp in tps]
    reader = ChangelogReader(_Consumer(batch))
    for tp in tps:
        reader.restore(_LoggedTask(TaskId(0, tp.partition), log), {tp: _LoggedStore(f"s{tp.partition}", log)},
                       {tp: 0}, {tp: 1})
    reader.poll()
    assert log == ["flush s0", "flush s1", "completed 0_0", "completed 0_1"]
    reader.close()
