"""Wires one coordinator together: the pure group, the round assigner, metrics and the Flight server.
This is what the driver starts; the generation and the assignment are queryable from here, and so is
the application run's secret, which the driver hands to the hosts it starts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from streams_rt.assignment import AssignmentConfigs
from streams_rt.config import StreamsConfig, resolve
from streams_rt.config.registry import (
    APPLICATION_ID,
    COORDINATOR_HOST,
    COORDINATOR_HTTP_ENABLED,
    COORDINATOR_HTTP_HOST,
    COORDINATOR_HTTP_PORT,
    COORDINATOR_PORT,
    GROUP_INITIAL_REBALANCE_DELAY_MS,
    SCHEDULED_REBALANCE_MAX_DELAY_MS,
    STATE_DIR,
    UPGRADE_FROM,
)
from streams_rt.coordinator.discovery import CoordinatorFile, this_process
from streams_rt.coordinator.group import Group, Member, RoundAssigner
from streams_rt.coordinator.group_record import GroupRecord
from streams_rt.coordinator.history import RebalanceHistory
from streams_rt.coordinator.http_endpoint import HttpEndpoint
from streams_rt.coordinator.metrics import HostRestarts, RebalanceMetrics
from streams_rt.coordinator.protocol_policy import ProtocolPolicy
from streams_rt.coordinator.server import CoordinatorServer, monotonic_ms
from streams_rt.coordinator.state_store import CoordinatorSnapshot, StateStore
from streams_rt.coordinator.status import build_status
from streams_rt.coordinator.streams_round import StreamsRoundPlanner, epoch_ms
from streams_rt.coordinator.task_reports import TaskReports
from streams_rt.coordinator.user_data import UserDataCodec
from streams_rt.log_levels import apply_log_levels
from streams_rt.protocol import RebalanceProtocol, TaskId, TopicPartition
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.errors import GroupError, GroupErrorException
from streams_rt.rpc.settings import ControlPlaneSettings

log = logging.getLogger(__name__)

MOVES_LOGGED = 20  # a round's log line names this many moved tasks, then counts the rest


@dataclass(frozen=True)
class CoordinatorConfig:
    """application.id names the group; the coordinator binds loopback unless told otherwise."""

    application_id: str
    bind_host: str = COORDINATOR_HOST.default_value()  # coordinator.host
    port: int = COORDINATOR_PORT.default_value()  # coordinator.port; 0 picks a free port
    tick_interval_ms: int = 50
    # group.initial.rebalance.delay.ms: holds an empty group's first round for more members, and the
    # first round after a restart (see Group).
    initial_rebalance_delay_ms: int = GROUP_INITIAL_REBALANCE_DELAY_MS.default_value()
    # The read-only HTTP endpoint: /metrics, /api/status and the status page.
    http_enabled: bool = COORDINATOR_HTTP_ENABLED.default_value()
    http_host: str = COORDINATOR_HTTP_HOST.default_value()
    http_port: int = COORDINATOR_HTTP_PORT.default_value()

    @classmethod
    def from_config(cls, config: StreamsConfig) -> CoordinatorConfig:
        return cls(
            application_id=config.get(APPLICATION_ID),
            bind_host=config.get(COORDINATOR_HOST),
            port=config.get(COORDINATOR_PORT),
            initial_rebalance_delay_ms=config.get(GROUP_INITIAL_REBALANCE_DELAY_MS),
            http_enabled=config.get(COORDINATOR_HTTP_ENABLED),
            http_host=config.get(COORDINATOR_HTTP_HOST),
            http_port=config.get(COORDINATOR_HTTP_PORT),
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> CoordinatorConfig:
        """`from_config(resolve(props))`: raises ConfigError (one line, naming the key) or ConfigErrors."""
        return cls.from_config(resolve(props))


class RoundPlanner(RoundAssigner, Protocol):
    """A round assigner that can also read (and refuse) a member's subscription at join time."""

    def decode_subscription(self, data: bytes) -> Any: ...

    def static_rejoin_change(self, old: Member, new: Member, members: Mapping[str, Member]) -> str | None: ...


class Coordinator:
    def __init__(
        self,
        config: CoordinatorConfig,
        planner: RoundPlanner,
        *,
        store: StateStore | None = None,
        clock: Callable[[], int] = monotonic_ms,
        settings: ControlPlaneSettings = ControlPlaneSettings(),
        secret: SharedSecret | None = None,
        task_inputs: Mapping[TaskId, Sequence[TopicPartition]] | None = None,
        discovery_dir: Path | None = None,
        wall_clock_ms: Callable[[], int] = epoch_ms,
    ) -> None:
        """`store` keeps the generation and the members across a driver restart; `clock` is the
        monotonic milliseconds every rule runs on (tests may move it forward). `settings` bound the
        requests and switch TLS on. Every call must carry `secret`: by default a new one when
        `settings.authenticate`, none otherwise (pass the old one to keep the hosts of this run
        across a coordinator restart). `task_inputs` (each task's input partitions) is what
        `task_status` reports tasks against. With `discovery_dir` (the application's state.dir) the
        coordinator writes its coordinator file there for operator tools (coordinator/discovery.py).
        `wall_clock_ms` (epoch) dates the rebalances for people."""
        self.config = config
        self.secret = secret if secret is not None else SharedSecret.generate() if settings.authenticate else None
        self.metrics = RebalanceMetrics()
        self.host_restarts = HostRestarts()
        self.history = RebalanceHistory()
        self._clock = clock
        self._wall_clock_ms = wall_clock_ms
        self._task_reports = TaskReports(task_inputs or {})
        self._store = store
        self._planner = planner
        snapshot = store.load() if store is not None else None
        if snapshot is not None and snapshot.application_id != config.application_id:
            raise ValueError(
                f"the state store holds application {snapshot.application_id!r}, not {config.application_id!r}"
            )
        now = clock()
        if snapshot is not None:
            log.info(
                "coordinator for %s restored at generation %d with %d members; first round not before %d ms",
                config.application_id, snapshot.group.generation, len(snapshot.group.members),
                config.initial_rebalance_delay_ms,
            )
        self.group = Group(
            config.application_id,
            None,  # rounds are computed by the server's RoundRunner, off the group lock
            restored=snapshot.group if snapshot is not None else None,
            now_ms=now,
            observer=self.metrics,
            persistent=store is not None,
            hold_rounds_until_ms=now + config.initial_rebalance_delay_ms if snapshot is not None else 0,
            initial_rebalance_delay_ms=config.initial_rebalance_delay_ms,
            static_rejoin_change=planner.static_rejoin_change,
        )
        self._server = CoordinatorServer(
            self.group,
            assigner=planner,
            decode_subscription=planner.decode_subscription,
            describe=self.describe,
            status=self.status,
            set_protocol=lambda protocol: self.set_protocol(protocol, "operator set_protocol action"),
            request_shutdown=self.request_shutdown,
            drain_member=self.drain_member,
            save=self._save if store is not None else None,
            generation_formed=self._generation_formed,
            task_reports=self._task_reports,
            host=config.bind_host,
            port=config.port,
            tick_interval_ms=config.tick_interval_ms,
            clock=clock,
            secret=self.secret,
            tls=settings.server_tls(),
            settings=settings,
        )
        self._http: HttpEndpoint | None = None
        # The Flight server answers from its construction on, on gRPC's threads, until close(). Nothing
        # calls its `serve()`: pyarrow's ServeWithSignals would shut it down on the process's SIGINT,
        # and Ctrl-C in the driver must let the query stop cleanly first, with the coordinator still there.
        self._discovery: tuple[Path, CoordinatorFile] | None = None
        try:
            if config.http_enabled:
                self._http = HttpEndpoint(self.status, config.http_host, config.http_port, secret=self.secret,
                                          tls_files=settings.server_tls_files())
            if discovery_dir is not None:
                pid, started = this_process()
                found = CoordinatorFile(config.application_id, self.address, self.http_url, pid, started,
                                        self.secret.token if self.secret is not None else None,
                                        None if settings.ssl_truststore_location is None
                                        else str(settings.ssl_truststore_location))
                found.write(discovery_dir)
                self._discovery = (discovery_dir, found)
        except BaseException:
            self.close()
            raise
        log.info("coordinator for %s listening on %s%s", config.application_id, self.address,
                 f"; status page and /metrics on {self.http_url}" if self.http_url else "")

    @property
    def http_url(self) -> str | None:
        """The HTTP endpoint (status page at `/`, `/metrics`, `/api/status`), or None when it is off."""
        return self._http.url if self._http is not None else None

    @property
    def address(self) -> str:
        return self._server.address

    @property
    def generation(self) -> int:
        with self._server.lock:
            return self.group.generation

    def describe(self) -> dict[str, Any]:
        """The group's state, generation and every member's current assignment, plus metrics."""
        with self._server.lock:
            members = {
                mid: {
                    "instance_id": m.instance_id,
                    "protocol": m.protocol.name,
                    # the metadata version of its subscription, and the newest it can read (KIP-268)
                    "version": getattr(m.subscription, "version", None),
                    "latest_supported_version": getattr(m.subscription, "latest_supported_version", None),
                    "capacity": m.capacity,
                    "calls_in_flight": self._server.calls_in_flight(mid),
                    "generation": m.assignment.generation if m.assignment else -1,
                    **(m.assignment.summary() if m.assignment else {}),
                }
                for mid, m in self.group.members.items()
            }
            policy = getattr(self._planner, "policy", None)
            return {
                "state": self.group.state.value,
                "generation": self.group.generation,
                "protocol": self.group.protocol.name if self.group.protocol is not None else "",
                "pending_deliveries": self.group.pending_deliveries,
                "saving": self.group.saving,
                "protocol_policy": policy.describe() if isinstance(policy, ProtocolPolicy) else {},
                "members": members,
                "metrics": self.metrics.snapshot(self._clock()),
            }

    def status(self) -> dict[str, Any]:
        """The operator's view (coordinator/status.py): what `streams-rt status`, the status page and
        /metrics show."""
        with self._server.lock:
            return build_status(
                group=self.group,
                tasks=self._task_reports.status(self.group),
                endpoints=self._task_reports.endpoints(self.group),
                pids=self._task_reports.pids(self.group),
                lags=getattr(self._planner, "reported_lags", {}),
                rebalances=self.history.events(),
                metrics={**self.metrics.snapshot(self._clock()), **self.host_restarts.snapshot(self._clock())},
                coordinator=self.address,
                http=self.http_url,
                now_ms=self._wall_clock_ms(),
                draining=getattr(self._planner, "draining", frozenset()),
            )

    def member_endpoints(self) -> set[str]:
        """The batch endpoints the group's members reported (a host that never reported is left out)."""
        with self._server.lock:
            return set(self._task_reports.endpoints(self.group).values())

    def host_restarted(self) -> None:
        """The driver restarted a task host that died: counted in `host-restart-total`."""
        self.host_restarts.record(self._clock())

    def _generation_formed(self) -> None:
        """Under the group lock, after a round was applied: record it, and log what moved and why."""
        group = self.group
        self._task_reports.round_applied(getattr(self._planner, "caught_up", {}))
        wall, now = self._wall_clock_ms(), self._clock()
        event = self.history.generation_formed(
            generation=group.generation,
            protocol=group.protocol.name if group.protocol is not None else "",
            reason=group.round_reason,
            started_ms=wall - (now - group.round_started_ms),
            formed_ms=wall,
            assignments={mid: m.assignment.tasks for mid, m in group.members.items() if m.assignment is not None},
        )
        shown = ", ".join(str(move) for move in event.moves[:MOVES_LOGGED])
        more = f" and {len(event.moves) - MOVES_LOGGED} more" if len(event.moves) > MOVES_LOGGED else ""
        log.info("group %s: generation %d formed (%s, %d members) %d ms after its round started (%s); %s",
                 group.group_id, event.generation, event.protocol or "failed", event.members,
                 event.formed_ms - event.started_ms, event.reason,
                 f"moved: {shown}{more}" if event.moves else "nothing moved")

    def _save(self, record: GroupRecord) -> None:
        assert self._store is not None
        self._store.save(CoordinatorSnapshot(self.config.application_id, record))

    def request_rebalance(self, reason: str) -> None:
        """Start a round now (an operator action, or the set of tasks changed)."""
        self._server.request_rebalance(reason)

    def set_protocol(self, protocol: RebalanceProtocol | None, reason: str = "operator toggle") -> None:
        """KIP-125's dynamic toggle: run the group EAGER or COOPERATIVE (None: automatic) from a
        round that starts now. Members told EAGER revoke everything before their next join."""
        policy = getattr(self._planner, "policy", None)
        if not isinstance(policy, ProtocolPolicy):
            raise GroupErrorException(GroupError.INVALID_REQUEST, "this coordinator's planner has no protocol toggle")
        self._server.request_rebalance(f"{reason}: protocol {protocol.name if protocol else 'automatic'}",
                                       lambda: policy.set_override(protocol))

    def request_shutdown(self, reason: str = "operator request") -> None:
        """KIP-725: shut the whole application down. A round starts now and tells every member
        SHUTDOWN_REQUESTED (so does every later round); each member revokes, leaves and stops.
        Raises GroupErrorException when the planner cannot (e.g. upgrade.from caps the version)."""
        request = getattr(self._planner, "request_shutdown", None)
        if request is None:
            raise GroupErrorException(GroupError.INVALID_REQUEST,
                                      "this coordinator's planner cannot request a shutdown")
        self._server.request_rebalance(f"application shutdown requested: {reason}", request)
        log.warning("application %s: shutdown requested: %s", self.config.application_id, reason)

    def drain_member(self, member_id: str, reason: str = "operator request") -> None:
        """Drain one member (assignment/drain.py): a round starts now in which it is a destination
        for nothing; its active tasks move as their new owners catch up, until it holds none. Its
        host asks for this, and stops once it holds nothing. GroupErrorException if the member is
        unknown or the planner cannot drain; nothing happens for a member draining already."""
        start = getattr(self._planner, "start_drain", None)
        if start is None:
            raise GroupErrorException(GroupError.INVALID_REQUEST, "this coordinator's planner cannot drain members")
        if member_id in getattr(self._planner, "draining", ()):
            return  # draining already: its host asks again at every generation

        def change() -> None:
            if member_id not in self.group.members:
                raise GroupErrorException(GroupError.UNKNOWN_MEMBER_ID, f"no member {member_id} in the group")
            start(member_id, frozenset(self.group.members))

        self._server.request_rebalance(f"drain of member {member_id} requested: {reason}", change)
        log.info("group %s: draining member %s (%s): warm-ups of its active tasks elsewhere first, each moved "
                 "once caught up", self.config.application_id, member_id, reason)

    def close(self) -> None:
        if self._discovery is not None:
            self._discovery[1].remove(self._discovery[0])
        if self._http is not None:
            self._http.close()
        self._server.shutdown()


def start_coordinator(
    props: Mapping[str, object] | StreamsConfig,
    tasks: Collection[TaskId],
    *,
    source_topics: Mapping[int, Sequence[str]] | None = None,
    changelog_end_offsets: Callable[[], Mapping[TaskId, int]] = dict,
    store: StateStore | None = None,
    codec: UserDataCodec | None = None,
) -> Coordinator:
    """A Streams coordinator from the application's properties (resolved here, once, against the
    registry; or an already resolved StreamsConfig): application.id, coordinator.host/port,
    group.initial.rebalance.delay.ms, scheduled.rebalance.max.delay.ms, upgrade.from, the
    assignor's settings and ControlPlaneSettings' (bounds, rpc.authenticate, rpc.ssl.*). Raises
    ConfigError or ConfigErrors, naming every bad or unknown key, before anything starts. `codec`
    fixes the latest user data version (default: ours, 11). Hand `coordinator.secret.environment()`
    to the hosts you start. `STREAMS_RT_LOG_LEVEL` sets the driver's streams_rt log levels
    (streams_rt/log_levels.py; ValueError when it is malformed)."""
    apply_log_levels()
    config = props if isinstance(props, StreamsConfig) else resolve(props)
    planner = StreamsRoundPlanner(
        tasks,
        configs=AssignmentConfigs.from_config(config),
        changelog_end_offsets=changelog_end_offsets,
        scheduled_rebalance_max_delay_ms=config.get(SCHEDULED_REBALANCE_MAX_DELAY_MS),
        source_topics=source_topics,
        codec=codec,
        policy=ProtocolPolicy(config.get(UPGRADE_FROM)),
    )
    inputs = {
        task: [TopicPartition(topic, task.partition) for topic in (source_topics or {}).get(task.subtopology, ())]
        for task in tasks
    }
    return Coordinator(
        CoordinatorConfig.from_config(config), planner, store=store,
        settings=ControlPlaneSettings.from_config(config), task_inputs=inputs, discovery_dir=config.get(STATE_DIR),
    )
