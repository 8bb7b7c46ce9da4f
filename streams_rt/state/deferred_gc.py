"""Python's cyclic garbage collector, held off while batches of records are read and processed.

A batch makes many short-lived GC-tracked objects (a confluent-kafka Message per record, the runtime's
record tuples), and keeps a chunk of them alive while it works, so the collector's allocation counters
fire over and over and each collection walks every live object of the chunk: measured, 40% of a
host's busy time while processing and half a restoring thread's CPU. Those objects form no cycles
(reference counting frees them), so nothing is lost by holding the collector off.

The hold is process-wide and counted: the collector stays off while any thread is inside a deferred
block (a host runs several tasks' batches at once, and restores beside them), and comes back when the
last one leaves; it then runs at the next allocation, on whatever thread allocates (the counts were
kept). So cyclic garbage cannot run away, `collect_if_grown` is called between chunks: when the
objects allocated and still alive since the last collection pass a bound, it collects the youngest
generation (the garbage user code makes in cycles is there).

`freeze_startup_objects` moves everything a process made while starting (modules, the topology) out
of the collector's sight for good, so a full collection no longer walks it.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

# Objects allocated and still alive since the last collection past which a deferred block collects
# anyway: about 100 MB of small containers.
GROWTH_BOUND = 1_000_000

_lock = threading.Lock()
_holders = 0  # threads inside a deferred block
_we_disabled = False  # the collector was on when the first holder came: the last one turns it on


@contextlib.contextmanager
def collector_deferred() -> Iterator[None]:
    """Hold off cyclic GC for the block (see the module docstring). A collector that someone else
    turned off stays off."""
    global _holders, _we_disabled
    with _lock:
        if _holders == 0:
            _we_disabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _we_disabled:
                gc.enable()


def collect_if_grown(bound: int = GROWTH_BOUND) -> bool:
    """Inside a deferred block, between chunks: collect the youngest generation if more than `bound`
    objects were allocated and survived since the last collection. True if it collected."""
    if gc.get_count()[0] <= bound:
        return False
    gc.collect(0)
    return True


def freeze_startup_objects() -> None:
    """Everything alive now is left out of every future collection (gc.freeze): call once, when a
    long-lived process has finished starting."""
    gc.collect()
    gc.freeze()
