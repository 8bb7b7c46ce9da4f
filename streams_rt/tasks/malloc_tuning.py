"""glibc malloc settings for the task host process, set by the host itself before its threads start,
and the return of freed memory to the system after batches.

Measured on the processing benchmark (word count, 5M records, two hosts): RocksDB, Arrow and the
Python heap together held under 200 MB, yet hosts peaked above 500 MB, and the excess grew with the
run. It was memory glibc had freed but kept: every thread that mallocs (librdkafka's, RocksDB's,
the batch server's) may get its own arena, up to 8 per core, and each keeps the high-water mark of
the bursts it served (a batch's messages, fetch buffers, producer queues); large buffers that glibc's
dynamic mmap threshold moved onto those heaps fragment them further. Two arenas and a fixed mmap
threshold keep freed memory returnable (bench/processing.py: see docs/operations.md, "Sizing").

Even so, glibc keeps memory freed inside its heaps until something at the top of a heap is freed:
measured on the peers benchmark's workload (100k keys, two tasks per host), a host held 417 MB of heap
of which 288 MB was free, for 130 MB in use. `FreeMemoryReturner` gives it back (malloc_trim) once
after batches have run, at most every second, from a thread of its own.

An operator who sets glibc's own variables (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_) keeps them. On
other C libraries (musl, macOS) nothing is set: their allocators have no such knobs.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Callable
from typing import cast

log = logging.getLogger(__name__)

# mallopt parameters (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

# Two arenas: the GIL serializes most allocation anyway, and the native threads that allocate on
# their own (librdkafka's, RocksDB's) contend little; each extra arena is memory held back.
ARENA_MAX = 2
# Blocks of 128 KiB or more (glibc's default threshold, fixed here, which also stops glibc from
# raising it to 32 MiB as it does by default) get their own mapping, returned to the system when
# freed, instead of a place in an arena that may never shrink below it.
MMAP_THRESHOLD_BYTES = 128 << 10


def is_glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        return False


def bound_malloc_arenas() -> bool:
    """Apply ARENA_MAX and MMAP_THRESHOLD_BYTES to this process (each unless its environment variable
    is set); False on another C library or when glibc refused one. Call it before threads start:
    arenas already made stay."""
    if not is_glibc():
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    applied = True
    for variable, parameter, value in (("MALLOC_ARENA_MAX", M_ARENA_MAX, ARENA_MAX),
                                       ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)):
        if variable not in os.environ:
            applied = mallopt(parameter, value) == 1 and applied
    if not applied:
        log.warning("glibc refused the malloc settings (arena max %d, mmap threshold %d): host memory may "
                    "grow past docs/operations.md's figures", ARENA_MAX, MMAP_THRESHOLD_BYTES)
    return applied


def use_system_arrow_pool() -> None:
    """Arrow allocations through malloc (bound and trimmed as above) rather than Arrow's own mimalloc
    pool, which keeps freed memory per thread: measured on the peers benchmark's workload, about
    100 MB less per host at peak. An operator who sets ARROW_DEFAULT_MEMORY_POOL keeps their choice."""
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())


class FreeMemoryReturner:
    """Returns glibc's freed heap memory to the system (malloc_trim) at most every `interval_s`, when
    batches ran since the last time. A no-op on other C libraries."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self._interval_s = interval_s
        self._ran = threading.Event()
        self._closed = threading.Event()
        self._trim = _malloc_trim() if is_glibc() else None
        self._thread = threading.Thread(target=self._loop, name="free-memory", daemon=True)

    def start(self) -> None:
        if self._trim is not None:
            self._thread.start()

    def batch_done(self) -> None:
        self._ran.set()

    def _loop(self) -> None:
        assert self._trim is not None
        while not self._closed.wait(self._interval_s):
            if self._ran.is_set():
                self._ran.clear()
                self._trim(0)

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()


def _malloc_trim() -> Callable[[int], int]:
    trim = ctypes.CDLL(None).malloc_trim
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return cast(Callable[[int], int], trim)
