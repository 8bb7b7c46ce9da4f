"""Kafka Streams' OffsetCheckpoint file: the changelog offsets a task's stores reflect.

Format (UTF-8 text, as in `OffsetCheckpoint.java`): a version line (`0`), a count line, then one
`<topic> <partition> <offset>` line per changelog partition. The offset is that of the last changelog
record the store contains (restore resumes at offset + 1), as in Kafka's ProcessorStateManager.
Parsing is pure (`parse_checkpoint`) so it is unit-tested without files; `OffsetCheckpoint` adds the
atomic write (temp file, fsync, rename, fsync of the directory).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from streams_rt.atomic_file import atomic_write_bytes
from streams_rt.protocol import OFFSET_SUM_OFFSET_UNKNOWN, TopicPartition
from streams_rt.protocol.wire import INT32_MAX, INT64_MAX
from streams_rt.state.errors import CorruptCheckpoint, StatePathError
from streams_rt.state.paths import read_regular_file

CHECKPOINT_FILE = ".checkpoint"
VERSION = 0
_WHITESPACE = re.compile(r"\s+")
_INT = re.compile(r"[+-]?\d+")


def format_checkpoint(offsets: Mapping[TopicPartition, int]) -> str:
    """The file's text; refuses names or offsets that Kafka's reader could not read back."""
    lines = [str(VERSION), str(len(offsets))]
    for tp, offset in offsets.items():
        if not tp.topic or _WHITESPACE.search(tp.topic):
            raise ValueError(f"topic name cannot be checkpointed: {tp.topic!r}")
        if not 0 <= tp.partition <= INT32_MAX:
            raise ValueError(f"partition out of range for {tp}")
        if not (0 <= offset <= INT64_MAX or offset == OFFSET_SUM_OFFSET_UNKNOWN):
            raise ValueError(f"offset {offset} for {tp} cannot be checkpointed")
        lines.append(f"{tp.topic} {tp.partition} {offset}")
    return "\n".join(lines) + "\n"


def _parse_int(text: str, path: Path | str | None, line: int, what: str, limit: int) -> int:
    if not _INT.fullmatch(text):
        raise CorruptCheckpoint(path, line, f"{what} is not an integer: {text!r}")
    value = int(text)
    if not -limit - 1 <= value <= limit:
        raise CorruptCheckpoint(path, line, f"{what} out of range: {text!r}")
    return value


def parse_checkpoint(text: str, path: Path | str | None = None) -> dict[TopicPartition, int]:
    """Inverse of `format_checkpoint`; any deviation raises CorruptCheckpoint with the line number."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the terminating newline
    if not lines:
        raise CorruptCheckpoint(path, 1, "file is empty")
    version = _parse_int(lines[0].strip(), path, 1, "version", INT32_MAX)
    if version != VERSION:
        raise CorruptCheckpoint(path, 1, f"unknown checkpoint version {version}")
    if len(lines) < 2:
        raise CorruptCheckpoint(path, 2, "file ended before the entry count")
    expected = _parse_int(lines[1].strip(), path, 2, "entry count", INT32_MAX)
    offsets: dict[TopicPartition, int] = {}
    for number, line in enumerate(lines[2:], start=3):
        pieces = _WHITESPACE.split(line.strip())
        if len(pieces) != 3:
            raise CorruptCheckpoint(path, number, f"malformed line {line!r} (expected 'topic partition offset')")
        topic, partition_text, offset_text = pieces
        partition = _parse_int(partition_text, path, number, "partition", INT32_MAX)
        offset = _parse_int(offset_text, path, number, "offset", INT64_MAX)
        if partition < 0 or (offset < 0 and offset != OFFSET_SUM_OFFSET_UNKNOWN):
            raise CorruptCheckpoint(path, number, f"negative partition or offset in {line!r}")
        tp = TopicPartition(topic, partition)
        if tp in offsets:
            raise CorruptCheckpoint(path, number, f"duplicate entry for {tp}")
        offsets[tp] = offset
    if len(offsets) != expected:
        raise CorruptCheckpoint(path, 2, f"expected {expected} entries but found {len(offsets)}")
    return offsets


def offset_sum(offsets: Mapping[TopicPartition, int]) -> int:
    """A task's offset sum as Kafka's TaskManager computes it: the sum of its changelog offsets, a
    changelog whose offset is unknown counting as nothing held (0), saturating at Long.MAX_VALUE."""
    total = 0
    for offset in offsets.values():
        if offset != OFFSET_SUM_OFFSET_UNKNOWN:
            total += offset
    return min(total, INT64_MAX)


class OffsetCheckpoint:
    """One `.checkpoint` file. Writes are atomic: a reader sees the old or the new file, never a mix."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> dict[TopicPartition, int]:
        """The offsets, `{}` if there is no file; CorruptCheckpoint if it cannot be parsed or is no
        regular file (a FIFO is never waited on)."""
        try:
            raw = read_regular_file(self.path)
        except FileNotFoundError:
            return {}
        except StatePathError as exc:
            raise CorruptCheckpoint(self.path, 0, exc.reason) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptCheckpoint(self.path, 0, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        return parse_checkpoint(text, self.path)

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Write to `<file>.tmp`, fsync, rename over the file, fsync the directory.

        Unlike Kafka an empty map is written too, so the file always says what the store holds. A
        special file left at `<file>.tmp` (opening a FIFO to write would wait for a reader) is
        removed first; a directory at either name is a StatePathError."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        for path in (tmp, self.path):
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(mode):
                raise StatePathError(path, "is a directory where the checkpoint file must be")
            if path == tmp and not stat.S_ISREG(mode):
                tmp.unlink()
        try:
            atomic_write_bytes(self.path, format_checkpoint(offsets).encode("utf-8"))
        except OSError as exc:
            raise StatePathError(self.path, exc.strerror or str(exc)) from exc

    def delete(self) -> None:
        """Remove the file (whatever kind of file it is); a directory in its place is a
        StatePathError: it is not ours to delete."""
        try:
            self.path.unlink(missing_ok=True)
        except IsADirectoryError:
            raise StatePathError(self.path, "is a directory where the checkpoint file must be") from None

    def __str__(self) -> str:
        return str(self.path)
