"""The task host: one long-lived process per executor that runs active and standby tasks.

It joins the coordinator's group (GroupMember) and turns the listener's callbacks into task
lifecycles on its state thread: assigned tasks restore (a standby here is promoted in place) and
then run; revoked ones finish their batch, commit and close; lost ones close at once. After every
assignment it opens and closes standbys to match. It serves batches over Arrow Flight and tells
the coordinator, for each active task, its phase and committed positions."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow.flight as flight
from confluent_kafka import Consumer, KafkaError, KafkaException

from streams_rt.config import StreamsConfig
from streams_rt.config.registry import (
    APPLICATION_ID,
    DESERIALIZATION_EXCEPTION_HANDLER,
    EXACTLY_ONCE_V2,
    PROCESSING_GUARANTEE,
    STATESTORE_CACHE_MAX_BYTES,
    TASK_OWNERSHIP_LOG,
)
from streams_rt.protocol import LATEST_SUPPORTED_VERSION, OFFSET_SUM_RUNNING_ACTIVE, HostInfo, TaskId, TopicPartition
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.batches import BatchError, BatchRequest, BatchRequestInvalid
from streams_rt.rpc.client import AuthenticationRefused, CoordinatorUnavailable, GroupClient
from streams_rt.rpc.messages import DrainMemberRequest, DrainMemberResponse, ReportTasksRequest, ReportTasksResponse
from streams_rt.rpc.settings import ControlPlaneSettings
from streams_rt.rpc.tasks import TaskProgress
from streams_rt.rpc.transport import SecureFlightServer, TlsIdentity
from streams_rt.state import (
    ChangelogError,
    ConsoleRestoreListener,
    StateConfig,
    StateUpdater,
    StoreCorrupted,
    TaskState,
)
from streams_rt.state.stores import RocksDBStore
from streams_rt.tasks.active import ActiveTaskRunner, BatchRefused, BatchTimings, ProcessingSettings, store_specs
from streams_rt.tasks.execution.runner import DeserializationHandler, ProcessingFailed
from streams_rt.tasks.faults import Faults
from streams_rt.tasks.group_member import GroupMember
from streams_rt.tasks.host_metrics import RestoreMetrics
from streams_rt.tasks.input_reader import InputUnavailable, input_consumer
from streams_rt.tasks.malloc_tuning import FreeMemoryReturner
from streams_rt.tasks.membership import MemberConfig, MemberState
from streams_rt.tasks.ownership_log import OwnershipLog
from streams_rt.tasks.prometheus import HostFigures, host_registry
from streams_rt.tasks.restart import RestartRefused, RestartRequest
from streams_rt.tasks.state_thread import StateThread, StateThreadStopped
from streams_rt.tasks.streams_codec import StreamsMemberCodec
from streams_rt.tasks.task import Ranges, Refusal, TaskPhase
from streams_rt.topology import Topology, TopologyLayout

log = logging.getLogger(__name__)
# A producer fenced by a newer one with its transactional.id (librdkafka's local code, the broker's).
FENCED = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})

REPORT_INTERVAL_S = 0.5
# How often the state thread reads the changelogs' ends for the standbys' lags that readers see
# (each read asks the broker).
LAG_REFRESH_S = 1.0


class QueryServer(Protocol):
    """A server that lives as long as the host and reads its stores (interactive queries,
    `streams_rt.iq`). It starts before the host joins its group, so the endpoint it returns (host:port)
    goes into the subscription, as Kafka's `application.server`, and into every member's metadata."""

    def start(self) -> str: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class HostedTask:
    """A task whose state this host holds, as readers on other threads see it: read its stores
    through `state.reading()`."""

    task: TaskId
    standby: bool
    state: TaskState


@dataclass(frozen=True)
class GroupMetadata:
    """The group as the last assignment described it: every host's active and standby source
    partitions (the AssignmentInfo's partitions by host) and the generation."""

    generation: int
    partitions_by_host: Mapping[HostInfo, tuple[TopicPartition, ...]]
    standby_partitions_by_host: Mapping[HostInfo, tuple[TopicPartition, ...]]


@dataclass(frozen=True)
class HostSettings:
    """What a host needs besides the topology: the application's resolved configuration (every key
    checked once, by the registry), the coordinator's address, and where its batch endpoint binds."""

    config: StreamsConfig
    coordinator_address: str
    member: MemberConfig
    bind_host: str = "127.0.0.1"
    port: int = 0
    consumer_overrides: Mapping[str, Any] = field(default_factory=dict)
    latest_supported_version: int = LATEST_SUPPORTED_VERSION  # lower: a test's stand-in for an older release

    @property
    def processing(self) -> ProcessingSettings:
        config = self.config
        return ProcessingSettings(
            application_id=config.get(APPLICATION_ID),
            exactly_once=config.get(PROCESSING_GUARANTEE) == EXACTLY_ONCE_V2,
            cache_max_bytes=config.get(STATESTORE_CACHE_MAX_BYTES),
            deserialization_handler=DeserializationHandler(config.get(DESERIALIZATION_EXCEPTION_HANDLER)),
            ownership_log=config.get(TASK_OWNERSHIP_LOG),
        )


def reported_tasks(opened: Mapping[TaskId, tuple[TaskPhase, Mapping[TopicPartition, int]]],
                   active: frozenset[TaskId]) -> dict[str, dict[str, Any]]:
    """The `tasks` of a report: each active task's phase and committed positions. An active task not
    opened yet (its promotion still fencing, say) is CREATED, so readers know its owner at once (they
    wait for it if the round found it caught up, else sit the task out: spark/refused_batch.py); an
    opened task no longer active (being given up) is left out."""
    tasks: dict[str, dict[str, Any]] = {
        str(t): {"phase": phase.value,
                 "positions": [[tp.topic, tp.partition, o] for tp, o in sorted(positions.items())]}
        for t, (phase, positions) in opened.items() if t in active
    }
    tasks.update({str(t): {"phase": TaskPhase.CREATED.value, "positions": []} for t in sorted(active - set(opened))})
    return tasks


def fence_ahead(promoting: list[TaskState]) -> None:
    """Fence the previous owners of the standbys about to be promoted all at once (TaskState.fence):
    one after another, each waits for the broker to abort its dead owner's open transaction; and
    before their changelogs' ends are read for all of them. A fencing that fails here is left to
    promote(), which opens the writer again and fails the task as it would have."""
    if len(promoting) < 2:
        outcomes = [_try_fence(state) for state in promoting]
    else:
        with ThreadPoolExecutor(max_workers=len(promoting), thread_name_prefix="streams-rt-fence") as pool:
            outcomes = list(pool.map(_try_fence, promoting))
    for state, outcome in zip(promoting, outcomes, strict=True):
        if outcome is not None:
            log.info("task %s: fencing ahead of its promotion failed (promote tries again): %s", state.task, outcome)


def _try_fence(state: TaskState) -> Exception | None:
    try:
        state.fence()
        return None
    except Exception as e:  # noqa: BLE001 - reported by fence_ahead; promote() meets it again
        return e


class TaskHost:
    def __init__(self, settings: HostSettings, topology: Topology, layout: TopologyLayout,
                 query_server: Callable[[TaskHost], QueryServer | None] | None = None,
                 on_restart: Callable[[RestartRequest], None] | None = None) -> None:
        """`query_server` makes the host's interactive-query server (injected: `tasks` does not
        know `iq`, which reads the host through `hosted_tasks` and `group_metadata`). `on_restart`
        takes a checked restart request (raising RestartRefused to refuse it): the host's process
        closes the host and execs the new one."""
        self.settings = settings
        self.topology, self.layout = topology, layout
        self._processing = settings.processing
        self._faults = Faults.from_environment()
        self._state_config = StateConfig.from_config(settings.config)
        self.directory = self._state_config.open_state_directory()
        self.restore_metrics = RestoreMetrics(
            {spec.name: sub.id for sub in topology.subtopologies for spec in store_specs(topology, sub.id)},
            ConsoleRestoreListener())
        self._reader = self._state_config.changelog_reader(self.restore_metrics)
        self._reader.holds_standby = functools.partial(self._faults.armed, "hold_standby")
        self._updater = StateUpdater(self._reader, self._state_config.commit_interval_ms)
        self._state = StateThread(self._updater, self._start_restored_tasks, self._reopen_corrupted)
        self._actives: dict[TaskId, ActiveTaskRunner] = {}  # touched on the state thread only...
        self._standbys: dict[TaskId, TaskState] = {}
        self._view: dict[TaskId, ActiveTaskRunner] = {}  # ...and copies of it for the other threads
        self._standby_sums: dict[TaskId, int] = {}
        self._hosted: dict[TaskId, HostedTask] = {}  # copies for readers on other threads...
        self._lags_seen: dict[TaskId, dict[TopicPartition, int]] = {}
        self._restore_progress: dict[TaskId, tuple[int, int]] = {}
        self._lags_read_at = 0.0
        self._closed_timings: list[BatchTimings] = []
        self._changed = threading.Event()
        self._closing = threading.Event()
        self._generation = -1  # the member's, as last told to the listener; read without locks
        self._drain = DrainState()
        log_path = self._processing.ownership_log
        self._ownership = OwnershipLog(log_path, str(self.directory.process_id)) if log_path else None
        control = ControlPlaneSettings.from_config(settings.config)
        roots = control.client_root_certs()
        self.server = BatchServer(self, settings.bind_host, settings.port, control.server_tls())
        self._codec = codec = StreamsMemberCodec(self.directory.process_id, standby_offset_sums=self._offset_sums,
                                                 latest_supported_version=settings.latest_supported_version)
        self.on_restart = on_restart
        self._query_factory = query_server
        self._query_server: QueryServer | None = None
        self.query_endpoint: str | None = None
        self.member = GroupMember(settings.member, codec, _Listener(self),
                                  connect=lambda: GroupClient(settings.coordinator_address, tls_root_certs=roots))
        self.metrics_registry = host_registry(self)
        self._reporter = threading.Thread(target=self._report_loop, name="streams-rt-report", daemon=True)
        self._report_client = GroupClient(settings.coordinator_address, tls_root_certs=roots)
        self._free_memory = FreeMemoryReturner()

    @property
    def endpoint(self) -> str:
        return self.server.endpoint

    def start(self) -> None:
        self.server.start()
        self._state.start()
        self._query_server = None if self._query_factory is None else self._query_factory(self)
        if self._query_server is not None:
            self.query_endpoint = self._query_server.start()
            host, _, port = self.query_endpoint.rpartition(":")
            self._codec.endpoint = HostInfo(host, int(port))
        self.member.start()
        self._reporter.start()
        self._free_memory.start()
        log.info("task host %s serving batches at %s", self.directory.process_id, self.endpoint)

    # -- assignment (member thread, executed on the state thread) ------------------------------
    def assigned(self, tasks: frozenset[TaskId], generation: int) -> None:
        self._generation = generation
        self._changed.set()  # report now: the new tasks are CREATED while they are fenced and opened
        status = self.member.status()
        if self._ownership is not None:
            self._ownership.assigned(generation, status.active)
        if self._processing.exactly_once:
            # Fence here, while the state thread finishes the poll it is in (0.1 s and more under
            # load): fencing only makes each standby's writer, safe beside its reads (a copy of the
            # dict the state thread owns; a standby it closes meanwhile fails its fencing, logged).
            standbys = self._standbys.copy()
            fence_ahead([standbys[t] for t in sorted(tasks) if t in standbys])
        self._state.call(lambda: self._assign(tasks, status.standby, generation))

    def _assign(self, tasks: frozenset[TaskId], standbys: frozenset[TaskId], generation: int) -> None:
        promoting = [self._standbys[t] for t in sorted(tasks) if t in self._standbys]
        if self._processing.exactly_once:  # at least once, opening a writer fences nothing and costs nothing
            fence_ahead(promoting)  # done already, unless a standby was opened since `assigned` looked
        # After the fencing: the previous owners may have committed until then.
        changelog_ends = self._reader.changelog_ends(tp for state in promoting for tp in state.changelogs)
        for task in sorted(tasks):
            state = self._standbys.pop(task, None)
            promoted = state is not None
            if state is not None:
                self._updater.remove_standby(task)
            else:
                state = self._new_state(task)
            runner = ActiveTaskRunner(task, self.topology, self.layout, state, self._new_consumer, self._processing,
                                      self._faults, functools.partial(self._batch_done, task))
            self._actives[task] = runner
            runner.start_restore(changelog_ends)
            log.info("task %s: active here from generation %d, %s", task, generation,
                     "promoting its standby" if promoted else "restoring its state")
        for task in sorted(set(self._standbys) - standbys):
            self._updater.remove_standby(task)
            self._standbys.pop(task).close(clean=True)
            log.info("task %s: standby closed (not assigned here at generation %d)", task, generation)
        now_ms = time.monotonic_ns() // 1_000_000
        for task in sorted(standbys - set(self._standbys) - set(self._actives)):
            state = self._new_state(task)
            state.open_standby()
            self._updater.add_standby(state, now_ms)
            self._standbys[task] = state
            log.info("task %s: standby here from generation %d", task, generation)
        # The subscription reports the new standbys' offsets at once, not only after the next poll:
        # a rebalance in between would otherwise see them hold nothing and warm them up again.
        self._standby_sums = {t: s.offset_sum() for t, s in self._standbys.items()}
        self._publish()

    def revoked(self, tasks: frozenset[TaskId], generation: int) -> None:
        self._release(tasks, generation, clean=True)

    def lost(self, tasks: frozenset[TaskId], generation: int) -> None:
        self._release(tasks, generation, clean=False)

    def _release(self, tasks: frozenset[TaskId], generation: int, clean: bool) -> None:
        """Close the tasks on the state thread (committed when `clean`). When that thread has failed
        (it logged why) they are given up as lost: nothing can commit them now."""
        try:
            self._state.call(lambda: self._close(tasks, clean=clean, generation=generation))
        except StateThreadStopped as e:
            log.warning("tasks %s: given up without a commit at generation %d, %s; their next owner restores "
                        "them from the changelogs", ", ".join(sorted(map(str, tasks))), generation, e)
            clean = False
        if self._ownership is not None:
            self._ownership.released(generation, tasks, clean=clean)

    def _batch_done(self, task: TaskId, ranges: Ranges, replay: bool) -> None:
        """A batch of `task` committed (or replayed): the audit, at the generation the host is in."""
        if self._ownership is not None:
            self._ownership.batch(self._generation, task, ranges, replay)
        self._free_memory.batch_done()

    def _close(self, tasks: frozenset[TaskId], clean: bool, generation: int) -> None:
        why = "the host is closing" if self._closing.is_set() else "given up to the rebalance"
        for task in sorted(tasks):
            runner = self._actives.pop(task, None)
            if runner is not None:
                runner.close(clean=clean)  # waits for a batch in flight
                self._closed_timings.append(runner.timings)
                log.info("task %s: %s at generation %d (%s)", task, "revoked: committed and closed" if clean
                         else "lost (another host may own it now): closed without committing", generation, why)
        self._publish()

    def _reopen_corrupted(self, error: StoreCorrupted) -> None:
        """State thread: a store of the task is damaged (found while reading it). Close the task
        dirty and open it again: the open wipes the damaged store and restores it from its
        changelog (Kafka's TaskCorruptedException)."""
        task = TaskId.parse(error.task)
        log.warning("task %s: %s; closing it and restoring it from the changelog", task, error)
        runner = self._actives.pop(task, None)
        if runner is not None:
            runner.close(clean=False)
            self._closed_timings.append(runner.timings)
            self._assign(frozenset({task}), frozenset(self._standbys), self._generation)
            return
        standby = self._standbys.pop(task, None)
        if standby is not None:
            self._updater.remove_standby(task)
            standby.close(clean=False)
            self._assign(frozenset(), frozenset(self._standbys) | {task}, self._generation)

    def _new_state(self, task: TaskId) -> TaskState:
        return TaskState(self._state_config, self.directory, task, store_specs(self.topology, task.subtopology),
                         self._reader)

    def _new_consumer(self) -> Consumer:
        return input_consumer(self._state_config.bootstrap_servers, self._processing.application_id,
                              self.settings.consumer_overrides)

    def _start_restored_tasks(self) -> None:
        """State thread, after every poll: tasks whose restore finished start running."""
        started = False
        for task, runner in self._actives.items():
            if runner.restore_done:
                self._faults.reached("fail_state_thread", task)
                runner.start_running()
                started = True
        self._standby_sums = {t: s.offset_sum() for t, s in self._standbys.items()}
        self._restore_progress = self._reader.restore_progress()
        now = time.monotonic()
        if now - self._lags_read_at >= LAG_REFRESH_S:
            self._lags_seen = self._reader.lags_of(self._standbys)
            self._lags_read_at = now
        if started:
            self._publish()

    def _publish(self) -> None:
        """Share the record cache among the active tasks, copy what other threads may read, and
        tell the reporter."""
        share = self._processing.cache_max_bytes // max(1, len(self._actives))
        for runner in self._actives.values():
            runner.set_cache_budget(share)
        self._view = dict(self._actives)
        self._hosted = {**{t: HostedTask(t, True, s) for t, s in self._standbys.items()},
                        **{t: HostedTask(t, False, r.state) for t, r in self._actives.items()}}
        self._lags_read_at = 0.0  # new standbys: their lags at the next poll
        self._changed.set()

    # -- what readers on other threads see (interactive queries) -------------------------------
    def hosted_tasks(self) -> Mapping[TaskId, HostedTask]:
        return self._hosted

    def lag(self, task: TaskId) -> int | None:
        """Changelog offsets the task's stores have not applied: 0 for an active task that runs
        (its stores are the changelog's source), a standby's as last read (at most LAG_REFRESH_S
        old), None when not known yet."""
        hosted = self._hosted.get(task)
        if hosted is None:
            return None
        if not hosted.standby:
            return 0
        lags = self._lags_seen.get(task)
        return None if lags is None else sum(lags.values())

    def restore_progress(self, task: TaskId) -> tuple[int, int] | None:
        """(records restored, offsets left) of an active task that restores here, else None."""
        return self._restore_progress.get(task)

    def metric_figures(self) -> HostFigures:
        """What `/metrics` shows (read on the scraping thread; RocksDB's figures under each task's
        reading guard, so no store closes meanwhile)."""
        stores: dict[tuple[TaskId, str], dict[str, int]] = {}
        for task, hosted in sorted(self._hosted.items()):
            with hosted.state.reading() as open_stores:
                for name, store in sorted((open_stores or {}).items()):
                    if isinstance(store, RocksDBStore) and store.is_open:
                        stores[(task, name)] = store.figures()
        return HostFigures(
            tasks={t: r.metrics.snapshot() for t, r in sorted(self._view.items())},
            restores=self.restore_metrics.snapshot(),
            restore_remaining={t: left for t, (_, left) in self._restore_progress.items()},
            standby_lags={t: lags for t, lags in self._lags_seen.items() if (h := self._hosted.get(t)) and h.standby},
            listener=self.member.listener_metrics.snapshot(),
            stores=stores,
        )

    def group_metadata(self) -> GroupMetadata:
        member = self.member.status()
        return GroupMetadata(member.generation, self._codec.partitions_by_host,
                             self._codec.standby_partitions_by_host)

    def _offset_sums(self, standbys: frozenset[TaskId]) -> Mapping[TaskId, int]:
        """The subscription's task offset sums: everything on disk, live values for open standbys."""
        sums = dict(self.directory.task_offset_sums())
        sums.update(self._standby_sums)
        for task in self._view:
            sums[task] = OFFSET_SUM_RUNNING_ACTIVE
        return sums

    # -- batches (RPC threads) ---------------------------------------------------------------
    def run_batch(self, request: BatchRequest) -> Any:
        runner = self._view.get(request.task)
        if runner is None:
            raise BatchError(Refusal.NOT_OWNER.value, f"task {request.task} is not active on this host")
        try:
            table = runner.run_batch(request.ranges, request.batch_id)
        except BatchRefused as e:
            raise BatchError(e.refusal.value, e.reason) from None
        except ProcessingFailed as e:
            detail = {"topic": e.topic, "partition": e.partition, "offset": e.offset}
            raise BatchError("FAILED", str(e), detail) from None
        except InputUnavailable as e:
            raise BatchError("UNAVAILABLE", str(e)) from None
        except ChangelogError as e:  # rolled back; retriable: the broker was away, the batch may run again
            if not e.retriable:
                log.error("task %s: batch failed: %s", request.task, e)
            raise BatchError("UNAVAILABLE" if e.retriable else "FAILED", f"task {request.task}: {e}") from None
        except StoreCorrupted as e:
            self._state.call(functools.partial(self._reopen_corrupted, e))
            raise BatchError(Refusal.RESTORING.value, f"task {request.task}: {e}; restoring it") from None
        except KafkaException as e:
            if e.args[0].code() not in FENCED:
                log.exception("task %s: batch failed", request.task)
                raise BatchError("FAILED", f"task {request.task}: {type(e).__name__}: {e}") from None
            # A newer owner's transactional producer fenced this one (Kafka Streams' TaskMigratedException):
            # this host lost the task without knowing yet (its session expired); the caller asks the owner.
            log.warning("task %s: fenced by a newer owner of the task (%s); refusing the batch", request.task, e)
            raise BatchError(Refusal.NOT_OWNER.value, f"task {request.task} has a newer owner: {e}") from None
        except Exception as e:  # the batch was rolled back; the caller sees why, the host goes on
            log.exception("task %s: batch failed", request.task)
            raise BatchError("FAILED", f"task {request.task}: {type(e).__name__}: {e}") from None
        self._changed.set()
        return table

    def commit(self, request: BatchRequest) -> None:
        runner = self._view.get(request.task)
        if runner is None:
            raise BatchError(Refusal.NOT_OWNER.value, f"task {request.task} is not active on this host")
        applied = runner.core.last_ranges
        if applied != dict(request.ranges) and not all(
            runner.core.positions.get(tp, -1) >= end for tp, (_, end) in request.ranges.items()
        ):
            raise BatchError(Refusal.OUT_OF_ORDER.value, f"task {request.task} has not applied that batch")

    def status(self) -> dict[str, Any]:
        member = self.member.status()
        timings = BatchTimings()
        for runner in list(self._view.values()) + self._closed_timings:
            timings.add(runner.timings if isinstance(runner, ActiveTaskRunner) else runner)
        return {
            "pid": os.getpid(),
            "batches": dataclasses.asdict(timings),
            "process_id": str(self.directory.process_id),
            "member_id": member.member_id,
            "generation": member.generation,
            "state": member.state.value,
            "active": {str(t): r.core.phase.value for t, r in sorted(self._view.items())},
            "standby": sorted(str(t) for t in member.standby),
            "standby_lag": self._state.call(self._standby_lags, timeout_s=10),
        }

    def progress(self) -> dict[str, Any]:
        """Each active task's committed positions and the batch it applied last, as of now (the Spark
        source asks here rather than trust a report to the coordinator that may be a moment old)."""
        return {str(t): TaskProgress(r.positions(), r.core.last_batch).to_json() for t, r in list(self._view.items())}

    def _standby_lags(self) -> dict[str, int]:
        """State thread: each standby's offsets behind its changelogs' ends. A standby whose changelog
        ends cannot be read now (the broker away, or just back without the partition's metadata yet)
        is left out, its lag unknown, rather than failing the whole status call."""
        lags = {}
        for task, standby in sorted(self._standbys.items()):
            try:
                lags[str(task)] = standby.lag()
            except ChangelogError as e:
                log.debug("standby %s: lag unknown for now: %s", task, e)
        return lags

    # -- draining ----------------------------------------------------------------------------
    def request_drain(self, reason: str) -> None:
        """Drain this host: the coordinator moves its tasks to the others as they catch up; once it
        holds none, `drained` turns true (its process then stops). Any thread; idempotent."""
        if self._drain.reason is None:
            log.warning("draining: %s; the coordinator moves this host's tasks to the others as they catch up, "
                        "then the host stops", reason)
            self._drain.reason = reason
        self._changed.set()

    @property
    def draining(self) -> bool:
        """A drain was asked for (it may not have finished)."""
        return self._drain.reason is not None

    @property
    def drained(self) -> bool:
        """A drain was asked for, the coordinator took it, and a later generation left this host
        nothing to run."""
        member = self.member.status()
        asked = self._drain.asked
        return (asked is not None and asked[0] == member.member_id and member.generation > asked[1]
                and member.state is MemberState.STABLE and not member.active and not member.standby
                and not self._view)

    def _ask_to_drain(self, member_id: str, generation: int) -> None:
        """Reporter thread: tell the coordinator at every generation (it ignores a member it drains
        already), so a drain survives a coordinator restart and a member that rejoins under a new id."""
        reason = self._drain.reason
        if reason is None or self._drain.confirmed == (member_id, generation):
            return
        request = DrainMemberRequest(group_id=self.settings.member.application_id, member_id=member_id, reason=reason)
        try:
            response = self._report_client.call(request, DrainMemberResponse)
        except (CoordinatorUnavailable, AuthenticationRefused) as e:
            log.warning("cannot ask the coordinator to drain this host yet: %s", e)
            return
        if response.error != "NONE":
            log.warning("the coordinator refused to drain member %s: %s %s", member_id, response.error,
                        response.message)
            return
        self._drain.confirmed = (member_id, generation)
        if self._drain.asked is None or self._drain.asked[0] != member_id:
            self._drain.asked = (member_id, generation)
            log.info("the coordinator drains member %s from after generation %d", member_id, generation)

    # -- reporting ---------------------------------------------------------------------------
    def _report_loop(self) -> None:
        warned = False
        while not self._closing.is_set():
            self._changed.wait(REPORT_INTERVAL_S)
            self._changed.clear()
            member = self.member.status()
            if member.state not in (MemberState.STABLE, MemberState.RECONCILING) or not member.member_id:
                continue
            self._ask_to_drain(member.member_id, member.generation)
            opened = {t: (r.core.phase, r.positions()) for t, r in list(self._view.items())}
            tasks = reported_tasks(opened, member.active)
            request = ReportTasksRequest(group_id=self.settings.member.application_id, member_id=member.member_id,
                                         generation=member.generation, endpoint=self.endpoint, tasks=tasks,
                                         pid=os.getpid())
            try:
                response = self._report_client.call(request, ReportTasksResponse)
            except (CoordinatorUnavailable, AuthenticationRefused) as e:
                if not warned:
                    log.warning("cannot report tasks to the coordinator: %s", e)
                    warned = True
                continue
            warned = False
            if response.error != "NONE":
                log.debug("task report refused: %s %s", response.error, response.message)

    # -- closing -----------------------------------------------------------------------------
    def close(self, *, leave: bool = True) -> None:
        """Revoke and commit everything, leave the group (unless `leave` is False: a static member
        restarting in place stays, to come back with its tasks, KIP-345), stop serving."""
        self._closing.set()
        # Revokes active tasks through the listener (committed, closed).
        self.member.close(leave=leave)
        try:
            self._state.call(self._close_all)
        except StateThreadStopped as e:  # it logged why when it failed; the rest of the close goes on
            log.info("closing without checkpointing the stores: %s", e)
        self._state.stop()
        if self._query_server is not None:
            self._query_server.close()
        self.server.shutdown()
        self._report_client.close()
        self._free_memory.close()
        self._reader.close()
        self.directory.close()
        if self._ownership is not None:
            self._ownership.close()

    def _close_all(self) -> None:
        self._close(frozenset(self._actives), clean=True, generation=self._generation)
        for task, state in list(self._standbys.items()):
            self._updater.remove_standby(task)
            state.close(clean=True)
        self._standbys.clear()
        self._hosted = {}

    @property
    def failed(self) -> bool:
        return self.member.status().state is MemberState.FAILED or self._state.failure is not None


@dataclass
class DrainState:
    """Why the host drains (None: it does not), the member id and generation the coordinator first
    accepted the drain at, and the last ones it confirmed it."""

    reason: str | None = None
    asked: tuple[str, int] | None = None
    confirmed: tuple[str, int] | None = None


class _Listener:
    """KIP-429's listener, onto the host's task lifecycles."""

    def __init__(self, host: TaskHost) -> None:
        self._host = host

    def on_tasks_assigned(self, tasks: frozenset[TaskId], generation: int) -> None:
        self._host.assigned(tasks, generation)

    def on_tasks_revoked(self, tasks: frozenset[TaskId], generation: int) -> None:
        self._host.revoked(tasks, generation)

    def on_tasks_lost(self, tasks: frozenset[TaskId], generation: int) -> None:
        self._host.lost(tasks, generation)


class BatchServer(SecureFlightServer):
    """Arrow Flight: do_get(ticket = BatchRequest) streams the batch's output rows; actions
    `commit` (acknowledge a batch) and `status`. Guarded by the application's secret (the one the
    driver handed this process), as the coordinator is."""

    def __init__(self, host: TaskHost, bind_host: str, port: int, tls: TlsIdentity | None = None) -> None:
        super().__init__("task host batch endpoint", bind_host, port, secret=SharedSecret.from_environment(), tls=tls,
                         bind_key="the host file's bind_host")
        self._host = host
        self._thread = threading.Thread(target=self.serve, name="streams-rt-batches", daemon=True)

    @property
    def endpoint(self) -> str:
        return self.address

    def start(self) -> None:
        self._thread.start()

    def do_get(self, context: flight.ServerCallContext, ticket: flight.Ticket) -> flight.RecordBatchStream:
        request = _request(ticket.ticket)
        try:
            return flight.RecordBatchStream(self._host.run_batch(request))
        except BatchError as e:
            raise e.to_flight() from None

    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[bytes]:
        if action.type == "commit":
            try:
                self._host.commit(_request(action.body.to_pybytes()))
            except BatchError as e:
                raise e.to_flight() from None
            return iter([b"{}"])
        if action.type == "status":
            return iter([json.dumps(self._host.status()).encode()])
        if action.type == "progress":
            return iter([json.dumps(self._host.progress()).encode()])
        if action.type == "restart":
            return iter([self._restart(action.body.to_pybytes())])
        if action.type == "drain":
            return iter([self._drain(action.body.to_pybytes())])
        raise BatchError("INVALID", f"unknown action {action.type[:40]!r}; known: commit, status, progress, "
                         "restart, drain").to_flight()

    def _drain(self, body: bytes) -> bytes:
        try:
            reason = json.loads(body).get("reason") or "asked by an operator"
        except (ValueError, AttributeError):
            raise BatchError("INVALID", "a drain request is a JSON object with a `reason`").to_flight() from None
        self._host.request_drain(str(reason)[:200])
        return json.dumps({"draining": True, "pid": os.getpid()}).encode()

    def _restart(self, body: bytes) -> bytes:
        on_restart = self._host.on_restart
        if on_restart is None:
            raise BatchError("INVALID", "this host cannot restart itself (it runs inside another process)").to_flight()
        try:
            on_restart(RestartRequest.from_json(body))
        except RestartRefused as e:
            raise BatchError("INVALID", f"restart refused: {e}").to_flight() from None
        log.info("restart agreed: closing, then starting again with the new settings")
        return json.dumps({"restarting": True, "pid": os.getpid()}).encode()

    def action_types(self) -> list[tuple[str, str]]:
        return [("commit", "acknowledge a batch"), ("status", "the host's tasks"),
                ("progress", "each active task's committed positions and last batch"),
                ("restart", "close, then start again with new settings or code"),
                ("drain", "move every task to the other hosts as they catch up, then stop")]


def _request(body: bytes) -> BatchRequest:
    try:
        return BatchRequest.from_bytes(body)
    except BatchRequestInvalid as e:
        raise BatchError("INVALID", str(e)).to_flight() from None


def load_topology(reference: str, args: Mapping[str, Any] | None = None) -> Topology:
    """'module:attr': a Topology, or a callable returning one (called with `args`, e.g. topic
    names read from the application's configuration)."""
    import importlib

    module, _, attr = reference.partition(":")
    if not module or not attr:
        raise ValueError(f"a topology reference is 'module:attr', got {reference!r}")
    found = getattr(importlib.import_module(module), attr)
    topology = found(**(args or {})) if callable(found) and not isinstance(found, Topology) else found
    if not isinstance(topology, Topology):
        raise TypeError(f"{reference} is not a Topology (got {type(topology).__name__})")
    return topology

