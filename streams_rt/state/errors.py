"""Typed errors of the state layer; each names the file, task, topic or partition it is about."""

from __future__ import annotations

from pathlib import Path


class StateError(RuntimeError):
    """Base class: something about local state or its changelog went wrong."""


class StateDirectoryLockedError(StateError):
    """Another process holds the application-level lock of a state directory."""

    def __init__(self, path: Path, holder_pid: int | None) -> None:
        self.path, self.holder_pid = path, holder_pid
        super().__init__(
            f"state directory {path} is locked by another process (pid {holder_pid or 'unknown'}); "
            "two instances of one application must not share a state.dir"
        )


class TaskLockedError(StateError):
    """Another process (or another open in this one) holds a task directory's lock."""

    def __init__(self, task: str, path: Path, holder_pid: int | None) -> None:
        self.task, self.path, self.holder_pid = task, path, holder_pid
        super().__init__(f"task {task} is locked by pid {holder_pid or 'unknown'} ({path})")


class CorruptCheckpoint(StateError):
    """A `.checkpoint` file cannot be parsed; `line` is 1-based (0: the file as a whole)."""

    def __init__(self, path: Path | str | None, line: int, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        super().__init__(f"corrupt checkpoint {path or '<text>'} line {line}: {reason}")


class ChangelogError(StateError):
    """Writing or reading a changelog failed; names the topic and partition. `retriable`: the
    broker could not be reached (down, restarting): the same call may succeed once it is back."""

    def __init__(self, topic: str, partition: int | None, reason: str, retriable: bool = False) -> None:
        self.topic, self.partition, self.reason, self.retriable = topic, partition, reason, retriable
        where = topic if partition is None else f"{topic}-{partition}"
        super().__init__(f"changelog {where}: {reason}")


class RecordTooLarge(ChangelogError):
    """A record the topology wrote (to an output topic or a changelog) is bigger than Kafka takes:
    the producer's `message.max.bytes` or the topic's `max.message.bytes`. Names the topic and the
    record's size; the batch that wrote it fails and is rolled back."""

    def __init__(self, topic: str, partition: int | None, size: int, refusal: str) -> None:
        self.topic, self.partition, self.size, self.retriable = topic, partition, size, False
        self.reason = (f"a record of {size} bytes (key and value) is larger than Kafka accepts (the producer's "
                       f"message.max.bytes or the topic's max.message.bytes): {refusal}")
        where = topic if partition is None else f"{topic}-{partition}"
        StateError.__init__(self, f"topic {where}: {self.reason}")


class StoreClosedError(StateError):
    """A store was used after close (or after its task was handed over)."""


class StoreCorrupted(StateError):
    """A store's files are damaged or missing: a checksum mismatch, an iterator stopped by an error,
    a file RocksDB needs that is gone or is not a regular file. No answer is given from such a store
    (a short one would look like a true one). The store is marked damaged on disk, so the task's next
    open wipes it and restores it from its changelog (Kafka's TaskCorruptedException): a host closes
    the task dirty and opens it again. `task` is the task directory's name (`str(TaskId)`)."""

    def __init__(self, store: str, task: str, path: Path, reason: str) -> None:
        self.store, self.task, self.path, self.reason = store, task, path, reason
        super().__init__(f"store {store} of task {task} is damaged: {path}: {reason}")


class StatePathError(StateError):
    """A path of the state directory cannot be used, and wiping a store would not fix it: a file
    where a directory must be (or the reverse), no permission, a read-only or full file system. An
    operator has to fix the path named."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"state path {path}: {reason}")
