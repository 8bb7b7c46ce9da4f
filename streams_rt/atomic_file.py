"""Replace a file's content atomically and durably: a reader (or a process restarted after a
crash) sees either the old bytes or the new ones, never a mix, and once the call returned the new
bytes survive a crash. Shared by the checkpoints, the state directory's metadata and the
coordinator's file store, which all need exactly this."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `<name>.tmp` beside `path`, fsync it, rename it over `path`, then fsync the directory so
    the rename itself is durable. On failure the temporary file is removed and `path` is unchanged.
    One writer per path at a time (the temporary name is fixed, as in Kafka's OffsetCheckpoint)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
