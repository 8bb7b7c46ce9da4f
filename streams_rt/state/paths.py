"""Paths of the state directory, checked for their kind before use: nothing is opened in a way that
blocks on a FIFO, and a path of the wrong kind (a file where a directory must be, a directory where
a file must be) or without permission is a `StatePathError` naming it, not a bare OSError."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from streams_rt.state.errors import StatePathError

_KINDS = {
    stat.S_IFDIR: "directory",
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFLNK: "symbolic link",
}


def file_kind(mode: int) -> str:
    """What a stat mode describes, in words ("regular file", "FIFO", ...)."""
    return "regular file" if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "special file")


def read_regular_file(path: Path) -> bytes:
    """The bytes of a regular file. It is opened without blocking (an ordinary open of a FIFO waits
    for a writer) and its kind is checked on the open descriptor, so a swap between check and read
    changes nothing. FileNotFoundError if there is none; StatePathError if it is something else or
    cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StatePathError(path, exc.strerror or str(exc)) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise StatePathError(path, f"is a {file_kind(mode)}, not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise StatePathError(path, exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)


def ensure_directory(path: Path, mode: int = 0o777) -> Path:
    """Create `path` (and its parents) unless it is a directory already; StatePathError if it, or a
    parent, is something else or cannot be created."""
    try:
        path.mkdir(mode=mode, parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = next((p for p in (*reversed(path.parents), path) if p.exists() and not p.is_dir()), path)
        raise StatePathError(blocking, "is not a directory, and a directory must be there") from None
    except OSError as exc:
        raise StatePathError(path, exc.strerror or str(exc)) from exc
    return path
