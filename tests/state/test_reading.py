"""Readers on other threads (interactive queries): `TaskState.reading()` gives the committed stores,
none while restoring or closed; a close waits for a reader to finish (so no RocksDB snapshot outlives
it), and a reader that will not wait is told the stores are busy."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from streams_rt.protocol import TaskId
from streams_rt.state import KeyValueStore, Mode, StateConfig, StoreSpec, TaskStateBusy, ensure_changelog_topics
from tests.state.conftest import StateHost

pytestmark = pytest.mark.broker

TASK = TaskId(0, 0)
SPECS = [StoreSpec("kv")]


def test_readers_see_committed_state_and_closing_waits_for_them(make_config: Callable[..., StateConfig]) -> None:
    config = make_config()
    ensure_changelog_topics(config.bootstrap_servers, [s.changelog(config.application_id) for s in SPECS], 1)
    with StateHost(config) as host:
        state = host.active(TASK, SPECS)
        store = state.kv_store("kv")
        store.put(b"k", b"committed")
        state.commit()
        store.put(b"k", b"in flight")
        with state.reading() as stores:
            assert stores is not None and state.mode is Mode.ACTIVE
            read = stores["kv"]
            assert isinstance(read, KeyValueStore)
            assert read.get_committed(b"k") == b"committed"  # a batch's writes stay invisible
            assert list(read.range_committed()) == [(b"k", b"committed")]
        state.commit()

        holding, release, closed = threading.Event(), threading.Event(), threading.Event()
        busy: list[BaseException] = []
        scanned: list[list[tuple[bytes, bytes]]] = []

        def reader() -> None:
            with state.reading() as stores:
                assert stores is not None
                scan = stores["kv"]
                assert isinstance(scan, KeyValueStore)
                rows = scan.range_committed()
                holding.set()
                release.wait(30)
                scanned.append(list(rows))

        def closer() -> None:
            state.close()
            closed.set()

        threads = [threading.Thread(target=reader)]
        threads[0].start()
        assert holding.wait(30)
        threads.append(threading.Thread(target=closer))
        threads[1].start()
        assert not closed.wait(0.5)  # the close waits for the reader's scan
        try:
            with state.reading(wait=False):
                pass
        except TaskStateBusy as e:
            busy.append(e)
        release.set()
        for thread in threads:
            thread.join(30)
        assert closed.is_set() and len(busy) == 1
        assert scanned == [[(b"k", b"in flight")]]  # the scan ran to its end before the close
        with state.reading() as stores:
            assert stores is None and state.mode is Mode.CLOSED
        reopened = host.active(TASK, SPECS)  # nothing kept RocksDB open past the close
        assert reopened.kv_store("kv").get(b"k") == b"in flight"
        reopened.close()
