"""glibc malloc settings for the task host process, set by the host itself before its threads start.

Measured on the processing benchmark (word count, 5M records, two hosts): RocksDB, Arrow and the
Python heap together held under 200 MB, yet hosts peaked above 500 MB, and the excess grew with the
run. It was memory glibc had freed but kept: every thread that mallocs (librdkafka's, RocksDB's,
the batch server's) may get its own arena, up to 8 per core, and each keeps the high-water mark of
the bursts it served (a batch's messages, fetch buffers, producer queues); large buffers that glibc's
dynamic mmap threshold moved onto those heaps fragment them further. Two arenas and a fixed mmap
threshold keep freed memory returnable (bench/processing.py: see docs/operations.md, "Sizing").

An operator who sets glibc's own variables (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_) keeps them. On
other C libraries (musl, macOS) nothing is set: their allocators have no such knobs.
"""

from __future__ import annotations

import ctypes
import logging
import os

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
