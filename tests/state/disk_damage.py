"""Damage done to files on disk the way a failing disk, a crash or an operator's mistake does it: a
flipped byte, a file cut short, emptied, deleted, or replaced by a FIFO or a directory."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

# The kinds of file in a RocksDB directory, by their names.
ROCKSDB_FILES: dict[str, Callable[[Path], list[Path]]] = {
    "SST": lambda store: sorted(store.glob("*.sst")),
    "MANIFEST": lambda store: sorted(store.glob("MANIFEST-*")),
    "CURRENT": lambda store: [store / "CURRENT"],
    "WAL": lambda store: sorted(store.glob("*.log")),
    "OPTIONS": lambda store: sorted(store.glob("OPTIONS-*")),
}


def rocksdb_file(store: Path, kind: str) -> Path:
    """The file of a kind that matters most: the newest (the one RocksDB reads first); for SST
    files the largest (the data, not the offsets column family's few bytes)."""
    files = ROCKSDB_FILES[kind](store)
    assert files, f"no {kind} file in {store}: {sorted(p.name for p in store.iterdir())}"
    if kind == "SST":
        return max(files, key=lambda f: f.stat().st_size)
    return files[-1]


def flip_byte(path: Path, at: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def empty(path: Path) -> None:
    path.write_bytes(b"")


def delete(path: Path) -> None:
    path.unlink()


def replace_with_fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def replace_with_directory(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def empty_directory(path: Path) -> None:
    shutil.rmtree(path)
    path.mkdir()


DAMAGES: dict[str, Callable[[Path], None]] = {
    "flip": flip_byte,
    "truncate": truncate,
    "empty": empty,
    "delete": delete,
}
