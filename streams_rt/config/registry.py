"""Every configuration key streams_rt reads, defined once: Kafka Streams' name where Kafka has the
concept, with Kafka's default and validation unless `differs_from_kafka` says why not.

`read_by` names the code that reads a key today; a key with none is registered for work that is
coming (the Spark runtime, interactive queries) so that its name and default are fixed before that
code is written. Readers take a resolved `StreamsConfig` and read keys through the constants below
(`config.get(STATE_DIR)`), so each key is parsed and checked here alone."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from streams_rt.config.keys import (
    REQUIRED,
    Computed,
    ConfigKey,
    ConfigPrefix,
    Group,
    LessThan,
    Origin,
    Rule,
    SetTogether,
)
from streams_rt.config.values import (
    Boolean,
    Choice,
    Duration,
    FilePath,
    HostPort,
    Integer,
    ListOf,
    Nullable,
    ObjectReference,
    Text,
)
from streams_rt.protocol import ACCEPTED_UPGRADE_FROM

# The readers: each turns a resolved StreamsConfig into the typed settings of one part.
STATE_CONFIG = "StateConfig.from_config"
ASSIGNMENT_CONFIGS = "AssignmentConfigs.from_config"
COORDINATOR_CONFIG = "CoordinatorConfig.from_config"
START_COORDINATOR = "start_coordinator"
CONTROL_PLANE = "ControlPlaneSettings.from_config"
MEMBER_CONFIG = "MemberConfig.from_config"
HOST_PROCESSING = "HostSettings.processing"
SPARK_SOURCE_OPTIONS = "SourceOptions.parse"
QUERY_SETTINGS = "QuerySettings.from_config"
RESTART_REQUEST = "RestartRequest.host_config"

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"

_A, _S, _P = Group.APPLICATION, Group.STATE, Group.PROCESSING
_AS, _M, _C = Group.ASSIGNMENT, Group.MEMBERSHIP, Group.COORDINATOR


def default_state_dir() -> Path:
    """Kafka's default is `${java.io.tmpdir}/kafka-streams`; ours sits next to it."""
    return Path(tempfile.gettempdir()) / "streams-rt"


# ---- application --------------------------------------------------------------------------------
APPLICATION_ID = ConfigKey(
    "application.id", Text(r"[^/]+", "a non-empty name without '/'"), REQUIRED, _A,
    "names the group, the state directory and the internal topics",
    read_by=(STATE_CONFIG, COORDINATOR_CONFIG, MEMBER_CONFIG, HOST_PROCESSING, SPARK_SOURCE_OPTIONS),
    differs_from_kafka="refuses '/' (it names a directory); Kafka does not check it",
)
BOOTSTRAP_SERVERS = ConfigKey(
    "bootstrap.servers", ListOf(HostPort(), min_items=1), REQUIRED, _A,
    "the Kafka cluster: comma-separated host:port pairs",
    read_by=(STATE_CONFIG, SPARK_SOURCE_OPTIONS),
    differs_from_kafka="addresses are checked when the config is read; Kafka checks them when a client starts",
)
APPLICATION_SERVER = ConfigKey(
    "application.server", Nullable(HostPort(), blank_is_unset=True), None, _A,
    "host:port of this task host's interactive-query endpoint, sent to the group in its subscription; unset: "
    "the address it binds (`iq.bind.host` and the port it got)",
    read_by=(QUERY_SETTINGS,),
    differs_from_kafka="must be host:port when set; Kafka checks it only when the instance starts. Its port is "
    "also the port bound when `iq.port` is 0 (Kafka leaves the server to the user)",
)

# ---- state --------------------------------------------------------------------------------------
STATE_DIR = ConfigKey(
    "state.dir", FilePath(), Computed(default_state_dir, "`$TMPDIR/streams-rt`"), _S,
    "root of `<state.dir>/<application.id>/<subtopology>_<partition>/`; the driver's coordinator writes "
    "`<state.dir>/<application.id>.coordinator.json` there for `streams-rt status`",
    read_by=(STATE_CONFIG, START_COORDINATOR),
    differs_from_kafka="Kafka's default is `$TMPDIR/kafka-streams`; an empty path is refused",
)
STATE_CLEANUP_DELAY_MS = ConfigKey(
    "state.cleanup.delay.ms", Duration(0), 600_000, _S,
    "how long the directory of a task this host no longer owns is kept",
    read_by=(STATE_CONFIG,),
    differs_from_kafka="must be >= 0; Kafka does not check",
)
ROCKSDB_CONFIG_SETTER = ConfigKey(
    "rocksdb.config.setter", Nullable(ObjectReference("set_config")), None, _S,
    "an object (or `module:attr` naming one) whose `set_config(store, options, configs)` tunes each RocksDB store",
    read_by=(STATE_CONFIG,),
    differs_from_kafka="a Python object or `module:attr` where Kafka takes a Java class",
)
REPLICATION_FACTOR = ConfigKey(
    "replication.factor", Integer(1, also=(-1,)), 1, _S,
    "replicas of the changelog topics streams_rt creates (-1: the broker's `default.replication.factor`)",
    read_by=(STATE_CONFIG,),
    differs_from_kafka="Kafka's default is -1 (the broker's); ours is 1, which also suits a single-node broker; "
    "other values below 1 are refused",
)
STATESTORE_CACHE_MAX_BYTES = ConfigKey(
    "statestore.cache.max.bytes", Integer(0, bits=64), 10_485_760, _S,
    "bytes of record cache shared by all the stores of one task host",
    read_by=(HOST_PROCESSING,),
)
ROCKSDB_BLOCK_CACHE_BYTES = ConfigKey(
    "rocksdb.block.cache.bytes", Integer(0, bits=64), 32 << 20, _S,
    "block cache shared by all the RocksDB stores of a task host (data, index and filter blocks; the memtables "
    "are charged to it on top). Kafka Streams gives each store 50 MB and leaves a bound to `rocksdb.config.setter`",
    origin=Origin.OURS, read_by=(STATE_CONFIG,),
)
ROCKSDB_WRITE_BUFFER_BYTES = ConfigKey(
    "rocksdb.write.buffer.bytes", Integer(64 << 10, 64 << 30, bits=64), 16 << 20, _S,
    "size of one RocksDB memtable (the bounds are RocksDB's, which it would otherwise clip to silently)",
    origin=Origin.OURS, read_by=(STATE_CONFIG,),
)
ROCKSDB_MAX_WRITE_BUFFERS = ConfigKey(
    "rocksdb.max.write.buffers", Integer(2), 3, _S,
    "memtables a store may hold at once (RocksDB's minimum is 2); all the stores of a task host together hold at "
    "most this x `rocksdb.write.buffer.bytes` (one write buffer manager): a host's RocksDB memory is about block "
    "cache + this x write buffer bytes, however many stores it has",
    origin=Origin.OURS, read_by=(STATE_CONFIG,),
)

# ---- processing ---------------------------------------------------------------------------------
PROCESSING_GUARANTEE = ConfigKey(
    "processing.guarantee", Choice((AT_LEAST_ONCE, EXACTLY_ONCE_V2)), AT_LEAST_ONCE, _P,
    "`exactly_once_v2`: transactional changelog writes and read_committed restore",
    read_by=(STATE_CONFIG, HOST_PROCESSING),
)
COMMIT_INTERVAL_MS = ConfigKey(
    "commit.interval.ms", Duration(0), 30_000, _P,
    "how often standby tasks checkpoint",
    read_by=(STATE_CONFIG,),
    differs_from_kafka="Kafka lowers the default to 100 under `exactly_once_v2`; ours stays 30000",
)
DESERIALIZATION_EXCEPTION_HANDLER = ConfigKey(
    "deserialization.exception.handler", Choice(("fail", "log_and_continue")), "fail", _P,
    "a record that cannot be deserialized fails its task, or is logged (topic, partition, offset) and skipped",
    read_by=(HOST_PROCESSING,), deprecated_names=("default.deserialization.exception.handler",),
    differs_from_kafka="takes `fail` or `log_and_continue` where Kafka takes a handler class (default "
    "LogAndFailExceptionHandler; LogAndContinueExceptionHandler skips)",
)

TASK_OWNERSHIP_LOG = ConfigKey(
    "task.ownership.log", Nullable(FilePath(), blank_is_unset=True), None, _P,
    "a file every task host of the application appends one JSON line to per assignment it receives, task it gives "
    "up and batch it commits: an audit that shows no task ever had two active owners (unset: no audit)",
    origin=Origin.OURS, read_by=(HOST_PROCESSING,),
)

# ---- assignment ---------------------------------------------------------------------------------
NUM_STANDBY_REPLICAS = ConfigKey(
    "num.standby.replicas", Integer(0), 0, _AS,
    "standby replicas per stateful task, on distinct hosts",
    read_by=(ASSIGNMENT_CONFIGS,),
    differs_from_kafka="must be >= 0; Kafka does not check",
)
ACCEPTABLE_RECOVERY_LAG = ConfigKey(
    "acceptable.recovery.lag", Integer(0, bits=64), 10_000, _AS,
    "a host within this many records of the changelog end is caught up and may take the active task",
    read_by=(ASSIGNMENT_CONFIGS,),
)
MAX_WARMUP_REPLICAS = ConfigKey(
    "max.warmup.replicas", Integer(1), 2, _AS,
    "warm-up replicas in flight at once, group-wide",
    read_by=(ASSIGNMENT_CONFIGS,),
)
PROBING_REBALANCE_INTERVAL_MS = ConfigKey(
    "probing.rebalance.interval.ms", Duration(60_000), 600_000, _AS,
    "when a probing rebalance checks on warm-ups",
    read_by=(ASSIGNMENT_CONFIGS,),
)
RACK_AWARE_ASSIGNMENT_TAGS = ConfigKey(
    "rack.aware.assignment.tags", ListOf(Text(r"[^,]+", "non-empty, without ','"), max_items=5), (), _AS,
    "client tag keys (`client.tag.<key>`) that standbys are spread across",
    read_by=(ASSIGNMENT_CONFIGS,),
    differs_from_kafka="Kafka also requires each tag to be set as `client.tag.<key>` in the same config; the "
    "coordinator reads this on the driver while the tags are each host's, so ours does not",
)

# ---- group membership (the member on each task host) -----------------------------------------------
GROUP_INSTANCE_ID = ConfigKey(
    "group.instance.id",
    Nullable(Text(r"[A-Za-z0-9._-]+", "ASCII letters, digits, '.', '_' and '-'", max_length=249)), None, _M,
    "static membership: a host that rejoins within the session timeout keeps its tasks without a rebalance;"
    " each host appends its own name (`<id>-executor-<n>`), as Kafka Streams appends each thread's index",
    origin=Origin.CONSUMER, read_by=(MEMBER_CONFIG,),
    differs_from_kafka="the characters are checked when the config is read; Kafka checks them when the consumer"
    " starts. A static host leaves the group when it stops for good; only a restart in place keeps it a member",
)
SESSION_TIMEOUT_MS = ConfigKey(
    "session.timeout.ms", Duration(1, bits=32), 45_000, _M,
    "a host silent this long leaves the group",
    origin=Origin.CONSUMER, read_by=(MEMBER_CONFIG,),
    differs_from_kafka="must be >= 1; Kafka leaves the bounds to the broker",
)
HEARTBEAT_INTERVAL_MS = ConfigKey(
    "heartbeat.interval.ms", Duration(1, bits=32), 3_000, _M,
    "heartbeat period; rebalances are announced on the heartbeat",
    origin=Origin.CONSUMER, read_by=(MEMBER_CONFIG,),
    differs_from_kafka="must be >= 1; Kafka checks only that it is below the session timeout, when the consumer starts",
)
MAX_POLL_INTERVAL_MS = ConfigKey(
    "max.poll.interval.ms", Duration(1, bits=32), 300_000, _M,
    "the rebalance timeout: members that do not rejoin in time are removed",
    origin=Origin.CONSUMER, read_by=(MEMBER_CONFIG,),
)
NUM_STREAM_THREADS = ConfigKey(
    "num.stream.threads", Integer(1), 1, _M,
    "the host's capacity, which the assignor balances by",
    read_by=(MEMBER_CONFIG,),
    differs_from_kafka="must be >= 1; Kafka allows 0 for an instance that only runs global tables",
)
UPGRADE_FROM = ConfigKey(
    "upgrade.from", Nullable(Choice(ACCEPTED_UPGRADE_FROM)), None, _M,
    "the release a rolling upgrade starts from: keep its metadata version (and EAGER) until the second bounce",
    read_by=(START_COORDINATOR, MEMBER_CONFIG),
    differs_from_kafka="the releases streams_rt's protocol knows; Kafka 4.1 also accepts 4.0, Kafka 4.4 4.0 to 4.3",
)

# ---- coordinator (on the Spark driver) --------------------------------------------------------------
COORDINATOR_HOST = ConfigKey(
    "coordinator.host", Text(r"\S+", "a host name or address"), "127.0.0.1", _C,
    "address the coordinator binds (set a reachable one on a cluster)",
    origin=Origin.OURS, read_by=(COORDINATOR_CONFIG,),
)
COORDINATOR_PORT = ConfigKey(
    "coordinator.port", Integer(0, 65535), 0, _C,
    "port the coordinator binds; 0 picks a free one",
    origin=Origin.OURS, read_by=(COORDINATOR_CONFIG,),
)
COORDINATOR_HTTP_ENABLED = ConfigKey(
    "coordinator.http.enabled", Boolean(), True, _C,
    "serve the coordinator's read-only HTTP endpoint: `/metrics` (Prometheus), `/api/status` and the status page `/`",
    origin=Origin.OURS, read_by=(COORDINATOR_CONFIG,),
)
COORDINATOR_HTTP_HOST = ConfigKey(
    "coordinator.http.host", Text(r"\S+", "a host name or address"), "127.0.0.1", _C,
    "address the coordinator's HTTP endpoint binds (set a reachable one for Prometheus on another machine)",
    origin=Origin.OURS, read_by=(COORDINATOR_CONFIG,),
)
COORDINATOR_HTTP_PORT = ConfigKey(
    "coordinator.http.port", Integer(0, 65535), 0, _C,
    "port of the coordinator's HTTP endpoint; 0 picks a free one (`streams-rt status` prints it)",
    origin=Origin.OURS, read_by=(COORDINATOR_CONFIG,),
)
GROUP_INITIAL_REBALANCE_DELAY_MS = ConfigKey(
    "group.initial.rebalance.delay.ms", Duration(0, bits=32), 3_000, _C,
    "hold an empty group's first round until no new host joined for this long (at most a rebalance timeout):"
    " hosts that start together share the first round",
    origin=Origin.BROKER, read_by=(COORDINATOR_CONFIG,),
    differs_from_kafka="Kafka's broker takes a negative value as no delay; we refuse it",
)
SCHEDULED_REBALANCE_MAX_DELAY_MS = ConfigKey(
    "scheduled.rebalance.max.delay.ms", Duration(0, bits=32), 0, _C,
    "how long a departed host's tasks without a caught-up standby wait for it (0: not at all)",
    origin=Origin.CONNECT, read_by=(START_COORDINATOR,),
    differs_from_kafka="Kafka Connect's default is 300000; ours is 0 (off)",
)

GROUP_MIN_SESSION_TIMEOUT_MS = ConfigKey(
    "group.min.session.timeout.ms", Duration(1, bits=32), 6_000, _C,
    "a join with a shorter `session.timeout.ms` is refused",
    origin=Origin.BROKER, read_by=(CONTROL_PLANE,),
    differs_from_kafka="must be >= 1 and at most group.max.session.timeout.ms; the broker's config does not check",
)
GROUP_MAX_SESSION_TIMEOUT_MS = ConfigKey(
    "group.max.session.timeout.ms", Duration(1, bits=32), 1_800_000, _C,
    "a join with a longer `session.timeout.ms` is refused",
    origin=Origin.BROKER, read_by=(CONTROL_PLANE,),
    differs_from_kafka="must be >= 1; the broker's config does not check",
)
GROUP_MAX_REBALANCE_TIMEOUT_MS = ConfigKey(
    "group.max.rebalance.timeout.ms", Duration(1, bits=32), 1_800_000, _C,
    "a join with a longer `max.poll.interval.ms` (its rebalance timeout) is refused",
    origin=Origin.OURS, read_by=(CONTROL_PLANE,),
)
RPC_REQUEST_MAX_BYTES = ConfigKey(
    "rpc.request.max.bytes", Integer(1), 4 << 20, _C,
    "a larger request body to the coordinator is refused unread",
    origin=Origin.OURS, read_by=(CONTROL_PLANE,),
)
GROUP_MAX_SUBSCRIPTION_BYTES = ConfigKey(
    "group.max.subscription.bytes", Integer(1), 1 << 20, _C,
    "a join whose SubscriptionInfo is larger is refused",
    origin=Origin.OURS, read_by=(CONTROL_PLANE,),
)

# ---- the Spark source ---------------------------------------------------------------------------
MAX_RECORDS_PER_TASK_PER_BATCH = ConfigKey(
    "max.records.per.task.per.batch", Integer(1, bits=64), 100_000, Group.SPARK_SOURCE,
    "most input records one task reads in one micro-batch (Spark's read limit); large enough to amortise a "
    "micro-batch's fixed cost, small enough that a batch after downtime stays seconds long",
    origin=Origin.OURS, read_by=(SPARK_SOURCE_OPTIONS,),
)
BATCH_RETRY_TIMEOUT_MS = ConfigKey(
    "batch.retry.timeout.ms", Duration(0), 180_000, Group.SPARK_SOURCE,
    "how long the Spark source retries a task's batch (the broker unavailable, a batch out of order) and waits "
    "for the hosts when a query starts, before it fails; a task with no running owner (moving, restoring, its "
    "host dead) sits the micro-batch out instead and catches up in its next batch",
    origin=Origin.OURS, read_by=(SPARK_SOURCE_OPTIONS,),
)
LOCAL_TASK_HOSTS = ConfigKey(
    "local.task.hosts", Integer(1), 2, Group.SPARK_SOURCE,
    "task host processes in local mode (`local[N]`), so standbys have a second host; a cluster runs one "
    "per executor",
    origin=Origin.OURS,
)

# ---- interactive queries -----------------------------------------------------------------------
IQ_ENABLED = ConfigKey(
    "iq.enabled", Boolean(), True, Group.QUERIES,
    "every task host serves its stores over HTTP (`/v1/...`, see iq.md)",
    origin=Origin.OURS, read_by=(QUERY_SETTINGS,),
)
IQ_BIND_HOST = ConfigKey(
    "iq.bind.host", Text(r"\S+", "a host name or address"), "127.0.0.1", Group.QUERIES,
    "address the query endpoint binds; anything but loopback exposes the stores (the endpoint has no "
    "authentication)",
    origin=Origin.OURS, read_by=(QUERY_SETTINGS,),
)
IQ_PORT = ConfigKey(
    "iq.port", Integer(0, 65535), 0, Group.QUERIES,
    "port the query endpoint binds; 0: the port of `application.server` if set, else a free one",
    origin=Origin.OURS, read_by=(QUERY_SETTINGS,),
)
IQ_PAGE_SIZE_MAX = ConfigKey(
    "iq.page.size.max", Integer(1, 100_000), 1_000, Group.QUERIES,
    "the most entries one range or all page holds; a larger `limit` is refused (400)",
    origin=Origin.OURS, read_by=(QUERY_SETTINGS,),
)
IQ_PROXY_TIMEOUT_MS = ConfigKey(
    "iq.proxy.timeout.ms", Duration(1), 10_000, Group.QUERIES,
    "how long a `?route=proxy` request waits for the owner host",
    origin=Origin.OURS, read_by=(QUERY_SETTINGS,),
)

# ---- security -----------------------------------------------------------------------------------
SECURITY_PROTOCOL = ConfigKey(
    "security.protocol", Choice(("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), ignore_case=True), "PLAINTEXT",
    Group.SECURITY, "how every Kafka client talks to the brokers",
)

RPC_AUTHENTICATE = ConfigKey(
    "rpc.authenticate", Boolean(), True, Group.SECURITY,
    "a secret made per application run guards every call to the coordinator and to the task hosts' batch endpoints",
    origin=Origin.OURS, read_by=(CONTROL_PLANE,),
)
RPC_SSL_ENABLED = ConfigKey(
    "rpc.ssl.enabled", Boolean(), False, Group.SECURITY,
    "the coordinator speaks TLS only (`grpc+tls://`); its clients expect it",
    origin=Origin.OURS, read_by=(CONTROL_PLANE,),
)
RPC_SSL_CERTIFICATE_CHAIN_LOCATION = ConfigKey(
    "rpc.ssl.certificate.chain.location", Nullable(FilePath(), blank_is_unset=True), None, Group.SECURITY,
    "the coordinator's certificate chain (PEM file)",
    origin=Origin.OURS, read_by=(CONTROL_PLANE,),
)
RPC_SSL_PRIVATE_KEY_LOCATION = ConfigKey(
    "rpc.ssl.private.key.location", Nullable(FilePath(), blank_is_unset=True), None, Group.SECURITY,
    "the coordinator's private key (PEM file)",
    origin=Origin.OURS, read_by=(CONTROL_PLANE,),
)
RPC_SSL_TRUSTSTORE_LOCATION = ConfigKey(
    "rpc.ssl.truststore.location", Nullable(FilePath(), blank_is_unset=True), None, Group.SECURITY,
    "the certificates (PEM file) a client trusts for a TLS coordinator; unset: the system's roots",
    origin=Origin.OURS, read_by=(CONTROL_PLANE,),
)
HOST_RESTART_ALLOWED_INTERPRETERS = ConfigKey(
    "host.restart.allowed.interpreters", ListOf(Text(r"/[^,]*", "an absolute path, without ','")), (),
    Group.SECURITY,
    "the interpreters a host's `restart` action may start it from (absolute paths, as `streams-rt upgrade "
    "--to ENV` names `ENV/bin/python`); the one it runs is always allowed",
    origin=Origin.OURS, read_by=(RESTART_REQUEST,),
)
HOST_RESTART_ALLOWED_ENV = ConfigKey(
    "host.restart.allowed.env", ListOf(Text(r"[A-Za-z_][A-Za-z0-9_]*", "an environment variable name")), (),
    Group.SECURITY,
    "the environment variables a host's `restart` action may set (`streams-rt host restart --env`); none by default",
    origin=Origin.OURS, read_by=(RESTART_REQUEST,),
)

KEYS: tuple[ConfigKey[Any], ...] = (
    APPLICATION_ID, BOOTSTRAP_SERVERS, APPLICATION_SERVER,
    STATE_DIR, STATE_CLEANUP_DELAY_MS, ROCKSDB_CONFIG_SETTER, REPLICATION_FACTOR, STATESTORE_CACHE_MAX_BYTES,
    ROCKSDB_BLOCK_CACHE_BYTES, ROCKSDB_WRITE_BUFFER_BYTES, ROCKSDB_MAX_WRITE_BUFFERS,
    PROCESSING_GUARANTEE, COMMIT_INTERVAL_MS, DESERIALIZATION_EXCEPTION_HANDLER, TASK_OWNERSHIP_LOG,
    NUM_STANDBY_REPLICAS, ACCEPTABLE_RECOVERY_LAG, MAX_WARMUP_REPLICAS, PROBING_REBALANCE_INTERVAL_MS,
    RACK_AWARE_ASSIGNMENT_TAGS,
    GROUP_INSTANCE_ID, SESSION_TIMEOUT_MS, HEARTBEAT_INTERVAL_MS, MAX_POLL_INTERVAL_MS, NUM_STREAM_THREADS,
    UPGRADE_FROM,
    COORDINATOR_HOST, COORDINATOR_PORT, COORDINATOR_HTTP_ENABLED, COORDINATOR_HTTP_HOST, COORDINATOR_HTTP_PORT,
    GROUP_INITIAL_REBALANCE_DELAY_MS, SCHEDULED_REBALANCE_MAX_DELAY_MS,
    GROUP_MIN_SESSION_TIMEOUT_MS, GROUP_MAX_SESSION_TIMEOUT_MS, GROUP_MAX_REBALANCE_TIMEOUT_MS, RPC_REQUEST_MAX_BYTES,
    GROUP_MAX_SUBSCRIPTION_BYTES,
    MAX_RECORDS_PER_TASK_PER_BATCH, BATCH_RETRY_TIMEOUT_MS, LOCAL_TASK_HOSTS,
    IQ_ENABLED, IQ_BIND_HOST, IQ_PORT, IQ_PAGE_SIZE_MAX, IQ_PROXY_TIMEOUT_MS,
    SECURITY_PROTOCOL, RPC_AUTHENTICATE, RPC_SSL_ENABLED, RPC_SSL_CERTIFICATE_CHAIN_LOCATION,
    RPC_SSL_PRIVATE_KEY_LOCATION, RPC_SSL_TRUSTSTORE_LOCATION,
    HOST_RESTART_ALLOWED_INTERPRETERS, HOST_RESTART_ALLOWED_ENV,
)

CLIENT_TAG_PREFIX = ConfigPrefix(
    "client.tag.", _M,
    "`client.tag.<key>=<value>`: this host's tags (rack, zone), sent in its subscription",
    suffix=Text(max_length=20), value=Text(r".*", "any string", max_length=30),
    max_entries=5,
)
_CLIENT = "passed as given to"
PREFIXES: tuple[ConfigPrefix, ...] = (
    CLIENT_TAG_PREFIX,
    ConfigPrefix("consumer.", Group.CLIENTS, f"{_CLIENT} every consumer, prefix removed"),
    ConfigPrefix("main.consumer.", Group.CLIENTS, f"{_CLIENT} the consumers of active tasks; wins over `consumer.`"),
    ConfigPrefix("restore.consumer.", Group.CLIENTS, f"{_CLIENT} restore and standby consumers; wins over `consumer.`"),
    ConfigPrefix("producer.", Group.CLIENTS, f"{_CLIENT} every producer (changelogs), prefix removed"),
    ConfigPrefix("admin.", Group.CLIENTS, f"{_CLIENT} admin clients (topic creation), prefix removed"),
    ConfigPrefix("ssl.", Group.SECURITY,
                 f"{_CLIENT} every Kafka client, prefix kept (librdkafka names: `ssl.ca.location`)"),
    ConfigPrefix("sasl.", Group.SECURITY,
                 f"{_CLIENT} every Kafka client, prefix kept (librdkafka names: `sasl.mechanisms`)"),
    ConfigPrefix("spark.", Group.SPARK_SOURCE, "Spark's own settings: left to Spark, not checked here",
                 origin=Origin.SPARK),
)

RULES: tuple[Rule, ...] = (
    LessThan(HEARTBEAT_INTERVAL_MS.name, SESSION_TIMEOUT_MS.name),
    LessThan(GROUP_MIN_SESSION_TIMEOUT_MS.name, GROUP_MAX_SESSION_TIMEOUT_MS.name, or_equal=True),
    SetTogether(RPC_SSL_CERTIFICATE_CHAIN_LOCATION.name, RPC_SSL_PRIVATE_KEY_LOCATION.name),
)

BY_NAME: dict[str, ConfigKey[Any]] = {key.name: key for key in KEYS}
BY_DEPRECATED_NAME: dict[str, ConfigKey[Any]] = {old: key for key in KEYS for old in key.deprecated_names}
