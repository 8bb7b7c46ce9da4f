"""Reads of this host's stores for the query endpoint: which local task may answer (an active one,
or a standby within `max_lag`), the committed state read under the task's read guard (no close,
reopen or commit lands meanwhile: see TaskState.reading), and how fresh it is (the batch the state
was committed at, the changelog lag, active or standby, the generation)."""

from __future__ import annotations

import contextlib
import heapq
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from streams_rt.iq.codec import encode_base64url, to_json
from streams_rt.iq.errors import QueryFailed, unavailable
from streams_rt.iq.routing import StoreInfo
from streams_rt.protocol import TaskId
from streams_rt.protocol.wire import INT64_MAX
from streams_rt.state import KeyValueStore, Mode, StateStore, WindowStore
from streams_rt.tasks import batch_record
from streams_rt.tasks.batch_record import CorruptBatchRecord
from streams_rt.tasks.host import HostedTask, TaskHost


@dataclass(frozen=True)
class Freshness:
    task: TaskId
    standby: bool
    committed_batch: int | None
    lag: int | None

    def describe(self) -> dict[str, Any]:
        return {"task": str(self.task), "standby": self.standby, "committed_batch": self.committed_batch,
                "lag": self.lag}


@dataclass(frozen=True)
class Consistency:
    """What a read demands: `max_lag` lets a standby answer within that many changelog offsets;
    `at_batch` answers only from state committed at that batch."""

    max_lag: int | None = None
    at_batch: int | None = None


class LocalReads:
    def __init__(self, host: TaskHost) -> None:
        self._host = host

    def answering(self, task: TaskId, demand: Consistency) -> HostedTask | None:
        """The local copy of `task` that may answer (None: none here, ask its active host); a 503
        when the copy here is a standby too far behind."""
        hosted = self._host.hosted_tasks().get(task)
        if hosted is None or not hosted.standby:
            return hosted
        if demand.max_lag is None:
            return None
        lag = self._host.lag(task)
        if lag is None or lag > demand.max_lag:
            behind = "at a lag not known yet" if lag is None else f"{lag} offsets behind"
            raise unavailable("STANDBY_TOO_FAR_BEHIND", f"task {task}'s standby here is {behind}, over "
                              f"max_lag={demand.max_lag}", task=str(task), lag=lag, max_lag=demand.max_lag)
        return hosted

    def local_tasks(self, info: StoreInfo, demand: Consistency) -> list[HostedTask]:
        """The copies of the store's tasks that answer a range on this host: its active tasks, and
        with `max_lag` its standbys within it."""
        found = []
        for task, hosted in sorted(self._host.hosted_tasks().items()):
            if task.subtopology == info.subtopology and self.answering(task, demand) is not None:
                found.append(hosted)
        return found

    @contextlib.contextmanager
    def reading(self, hosted: HostedTask, info: StoreInfo, demand: Consistency,
                wait: bool) -> Iterator[tuple[StateStore, Freshness]]:
        """The task's store, held open (and no commit landing) until the block ends, with its
        freshness. `wait=False` raises TaskStateBusy rather than wait for a reopen or a commit."""
        with hosted.state.reading(wait) as stores:
            if stores is None:
                raise self._not_readable(hosted)
            freshness = Freshness(hosted.task, hosted.standby, _committed_batch(stores, hosted.task),
                                  self._host.lag(hosted.task))
            _check_batch(freshness, demand)
            yield stores[info.name], freshness

    def _not_readable(self, hosted: HostedTask) -> QueryFailed:
        progress = self._host.restore_progress(hosted.task)
        if hosted.state.mode is Mode.RESTORING or progress is not None:
            restored, left = progress or (0, 0)
            total = restored + left
            done = f"{restored} records restored, {left} to go" if total else "its progress is not known yet"
            return unavailable("RESTORING", f"task {hosted.task} is restoring its stores: {done}",
                               task=str(hosted.task), restored=restored, remaining=left,
                               progress=round(restored / total, 4) if total else 0.0)
        return unavailable("NOT_AVAILABLE", f"task {hosted.task} is {hosted.state.mode.value.lower()} here; "
                           "ask again", task=str(hosted.task))

    # -- the reads -------------------------------------------------------------------------------
    def get(self, hosted: HostedTask, info: StoreInfo, key: bytes, demand: Consistency,
            wait: bool) -> tuple[Any, Freshness]:
        with self.reading(hosted, info, demand, wait) as (store, freshness):
            assert isinstance(store, KeyValueStore)
            data = store.get_committed(key)
        return (None if data is None else to_json(info.value_serde, data)), freshness

    def windows(self, hosted: HostedTask, info: StoreInfo, key: bytes, time_from: int, time_to: int,
                demand: Consistency, wait: bool) -> tuple[list[dict[str, Any]], Freshness]:
        """A window store's windows of `key` starting in [time_from, time_to]; a session store's
        sessions of `key` that overlap it (end >= time_from, start <= time_to: Kafka's findSessions)."""
        size = info.window_size_ms or 0
        with self.reading(hosted, info, demand, wait) as (store, freshness):
            assert isinstance(store, WindowStore)
            if info.sessions:
                sessions = [(int.from_bytes(start, "big"), end, value)
                            for end, start, value in store.fetch_committed_entries(key, time_from, INT64_MAX)]
                rows = [(start, end, value) for start, end, value in sessions if start <= time_to]
            else:
                rows = [(start, start + size, value) for start, value in store.fetch_committed(key, time_from, time_to)]
        return [{"start": start, "end": end, "value": to_json(info.value_serde, value)}
                for start, end, value in rows], freshness

    def range(self, tasks: list[HostedTask], info: StoreInfo, start: bytes | None, end: bytes | None, limit: int,
              demand: Consistency, wait: bool) -> tuple[list[dict[str, Any]], str | None, list[Freshness]]:
        """One page of [start, end) over these tasks' copies, merged in key order, and the cursor of
        the next page (None: the last page). Every scan is closed inside the guards: an iterator left
        to the garbage collector would keep RocksDB open past a close."""
        with contextlib.ExitStack() as held:
            opened = [held.enter_context(self.reading(h, info, demand, wait)) for h in tasks]
            scans = []
            try:
                for store, _ in opened:
                    assert isinstance(store, KeyValueStore)
                    scans.append(store.range_committed(start, end))
                page = list(itertools.islice(heapq.merge(*scans, key=lambda entry: entry[0]), limit + 1))
            finally:
                for scan in scans:
                    close = getattr(scan, "close", None)
                    if close is not None:
                        close()
        more = len(page) > limit
        page = page[:limit]
        entries = [{"key": to_json(info.key_serde, k), "value": to_json(info.value_serde, v)} for k, v in page]
        cursor = encode_base64url(page[-1][0]) if more else None
        return entries, cursor, [f for _, f in opened]


def _committed_batch(stores: Mapping[str, StateStore], task: TaskId) -> int | None:
    store = stores.get(batch_record.store_name(task.subtopology))
    if not isinstance(store, KeyValueStore):
        return None
    try:
        return batch_record.committed_batch_id(store.get_committed)
    except CorruptBatchRecord:
        return None


def _check_batch(freshness: Freshness, demand: Consistency) -> None:
    wanted, have = demand.at_batch, freshness.committed_batch
    if wanted is None or have == wanted:
        return
    if have is None or have < wanted:
        raise unavailable("BATCH_NOT_YET_COMMITTED", f"task {freshness.task} has not committed batch {wanted} yet "
                          f"(its state is at batch {have})", task=str(freshness.task), committed_batch=have,
                          at_batch=wanted)
    raise QueryFailed(409, "BATCH_PASSED", f"task {freshness.task}'s state is at batch {have}, past {wanted}: "
                      "that cut is gone", {"task": str(freshness.task), "committed_batch": have, "at_batch": wanted})
