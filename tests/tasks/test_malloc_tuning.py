"""The host's glibc malloc settings, observed in a fresh interpreter (arenas made before the call
stay, so each case needs its own process): at most ARENA_MAX arenas however many threads allocate,
and large blocks mapped on their own even after a larger one was freed (glibc's default raises the
threshold then, and the next blocks land in an arena)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from streams_rt.tasks.malloc_tuning import ARENA_MAX, is_glibc

pytestmark = pytest.mark.skipif(not is_glibc(), reason="the settings are glibc's")

PROBE = textwrap.dedent("""
    import ctypes, json, os, sys, tempfile, threading
    from streams_rt.tasks.malloc_tuning import bound_malloc_arenas
    applied = bound_malloc_arenas() if sys.argv[1] == "bounded" else None
    libc = ctypes.CDLL(None)
    barrier = threading.Barrier(8)
    def allocate():
        block = bytearray(64 << 10)  # past pymalloc: a malloc from this thread's arena
        barrier.wait()
        del block
    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    large = bytearray(4 << 20)  # mapped, then freed: glibc's dynamic threshold rises past it
    del large
    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc.mallinfo2.restype = Info
    before = libc.mallinfo2().hblks
    blocks = [bytearray(512 << 10) for _ in range(4)]
    mapped = libc.mallinfo2().hblks - before
    with tempfile.NamedTemporaryFile("r") as out:
        libc.fopen.restype = ctypes.c_void_p
        stream = libc.fopen(out.name.encode(), b"w")
        libc.malloc_info(0, ctypes.c_void_p(stream))
        libc.fclose(ctypes.c_void_p(stream))
        arenas = out.read().count("<heap nr=")
    print(json.dumps({"applied": applied, "arenas": arenas, "mapped": mapped}))
""")


def probe(mode: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", PROBE, mode], env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_host_bounds_arenas_and_maps_large_blocks() -> None:
    default, bounded = probe("default"), probe("bounded")
    # glibc's defaults, which the bound must change: an arena per thread, large blocks in arenas.
    assert default["arenas"] > ARENA_MAX and default["mapped"] == 0
    assert bounded["applied"] is True
    assert bounded["arenas"] <= ARENA_MAX
    assert bounded["mapped"] == 4
