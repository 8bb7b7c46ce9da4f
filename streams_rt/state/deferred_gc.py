"""Python's cyclic garbage collector, held off while one changelog batch is read and applied.

`consume()` makes a GC-tracked Message per record, and the batch keeps them all alive while it is
applied, so the collector's allocation counters fire over and over and each full collection walks
every live Message: measured, half the restoring thread's CPU time. Those objects form no cycles
(reference counting frees them), so nothing is lost by holding the collector off; it runs again
at the first allocation after the batch, on whatever thread allocates (the counts were kept), so
any thread's cyclic garbage waits at most one batch.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_deferred() -> Iterator[None]:
    """Hold off cyclic GC for the block. A collector that is already off stays off (whoever turned
    it off turns it on again); if another thread turns it off meanwhile, the block's end turns it
    back on, as after any other block: the collector is process-wide."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
