"""docs/configuration.md, generated from the registry so that the page cannot drift from the code:
`python -m streams_rt.config --markdown > docs/configuration.md` (`make docs`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streams_rt.config.keys import ConfigKey, Group, Origin
from streams_rt.config.registry import KEYS, PREFIXES, RULES

REGENERATE = "python -m streams_rt.config --markdown > docs/configuration.md"

_INTRO = f"""\
# Configuration

<!-- Generated from streams_rt/config/registry.py by `{REGENERATE}` (or `make docs`).
     Edit the registry, not this page: a test fails when the two differ. -->

Every key streams_rt reads is defined once, in `streams_rt/config/registry.py`: Kafka Streams' name where
Kafka has the concept, with Kafka's default and validation unless the table says otherwise (*origin*
says whose name it is; **streams_rt** marks keys of our own). `streams_rt.config.resolve(props)` checks a
whole set of properties at once and returns an immutable `StreamsConfig`: `config.get("num.standby.replicas")`
is the parsed value (the default when not given), `config.originals` what was passed.

Each part takes its settings from a resolved `StreamsConfig` (`StateConfig.from_config(config)`,
`ControlPlaneSettings.from_config(config)`, `MemberConfig.from_config(config, coordinator_address)`, ...),
so a key is parsed and checked in the registry alone. Their `from_properties(props)`, `start_coordinator(props)`
and the task host resolve the whole application's properties first: every part takes the same set and
refuses the same bad or unknown key with the same error.

- Values may be strings (Spark options and command-line flags are) or Python values: `"2"` and `2` are the
  same; surrounding spaces are ignored; lists are comma-separated strings or sequences; durations are
  milliseconds (a Python `timedelta` works too).
- Every problem is a `ConfigError(key, value, reason)` with a one-line reason, for example
  `num.standby.replicas must be >= 0, got -1` or `application.id is required`; several problems come
  together as one `ConfigErrors`, so all can be fixed in one go.
- An unknown key is an error naming the closest valid key:
  `unknown configuration key 'num.standby.replica'; did you mean 'num.standby.replicas'?`. Keys under a
  prefix listed in [Prefixes](#prefixes) are the exception: they go to the Kafka clients or to Spark unchecked,
  as Kafka Streams passes `consumer.`, `producer.` and `admin.` settings on.
- *read by* names the code that reads a key today; "not yet" marks a key registered for work that is
  coming (the Spark runtime, interactive queries), so its name and default are settled first.
"""

_GROUP_INTROS: dict[Group, str] = {
    Group.APPLICATION: "Who the application is and where its Kafka cluster is.",
    Group.STATE: "`streams_rt.state.StateConfig` (see `state.md`): state directories, RocksDB stores, changelogs.",
    Group.PROCESSING: "How records are processed and committed.",
    Group.ASSIGNMENT: "`streams_rt.assignment.AssignmentConfigs` (see `assignment.md`), read on the driver.",
    Group.MEMBERSHIP: (
        "The group member on each task host, `streams_rt.tasks.membership.MemberConfig` (see `coordinator.md`), "
        "read by `MemberConfig.from_config(config, coordinator_address)`: each field is named after its key "
        "(`session_timeout_ms` for `session.timeout.ms`). Its other fields are not properties: "
        "`coordinator_address` is the driver coordinator's Flight address, and `protocol` and "
        "`subscription_version` are overrides the tests use instead of deriving them from `upgrade.from`."
    ),
    Group.COORDINATOR: (
        "The driver side: `start_coordinator(props, ...)`, `CoordinatorConfig`, and the bounds every join and "
        "request is held to, `ControlPlaneSettings` (see `coordinator.md`)."
    ),
    Group.SPARK_SOURCE: "The Spark source and the task hosts it starts.",
    Group.QUERIES: (
        "Each task host's HTTP endpoint over its stores, `streams_rt.iq.QuerySettings.from_config` (see `iq.md`)."
    ),
    Group.SECURITY: (
        "How the Kafka clients authenticate and encrypt, and streams_rt's own control plane (`rpc.*`: the "
        "coordinator, and the task hosts' batch endpoints, which take the driver's secret)."
    ),
    Group.CLIENTS: "Settings for the Kafka clients streams_rt creates, by kind of client.",
}

_OUTRO = """\
## Environment

| variable | default | meaning |
|---|---|---|
| `STREAMS_RT_HOME` | `./.streams-rt` | where `streams-rt dev-broker` keeps its broker directory |
| `STREAMS_RT_KAFKA_LIBS` | `jvm/target/kafka-libs` | the Kafka jars `make jars` resolved |
| `JAVA_HOME` | (unset: `java` and `javac` on `PATH`) | the JDK that runs the broker and compiles and runs the reference harnesses |
| `SPARK_CONF_DIR` | `spark-conf/` (set by `build_session` when unset) | where Spark reads `spark-defaults.conf` and `log4j2.properties` |

## Spark

`spark-conf/spark-defaults.conf` (local development and tests) and `spark-conf/cluster/spark-defaults.conf`
(commented template for a real cluster). `streams_rt.spark.session.build_session` sets `SPARK_CONF_DIR`
to `spark-conf/` unless it is already set, so Spark reads the first file and `spark-conf/log4j2.properties`
(Spark's own logging: warnings and errors) when it launches the JVM; values passed in code win over
the file. It has to happen before the process's first SparkSession.
"""  # noqa: E501 - a Markdown table row is one line


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _origin(origin: Origin) -> str:
    return "**streams_rt**" if origin is Origin.OURS else origin.value


def _read_by(readers: tuple[str, ...]) -> str:
    return ", ".join(f"`{reader}`" for reader in readers) if readers else "not yet"


def _default(key: ConfigKey[Any]) -> str:
    shown = key.shown_default()
    return shown if shown.startswith(("(", "`")) or shown in ("unset", "empty") else f"`{shown}`"


def _valid(key: ConfigKey[Any]) -> str:
    rules = [rule.describe_for(key.name) for rule in RULES]
    return "; ".join(part for part in [key.type.describe(), *rules] if part)


def _key_rows(keys: list[ConfigKey[Any]]) -> Iterator[str]:
    yield "| key | type | default | valid values | origin | read by | meaning |"
    yield "|---|---|---|---|---|---|---|"
    for key in keys:
        cells = [f"`{key.name}`", key.type.name, _default(key), _valid(key), _origin(key.origin),
                 _read_by(key.read_by), key.meaning]
        yield "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _differences(keys: list[ConfigKey[Any]]) -> Iterator[str]:
    notes = [f"- `{key.name}`: {key.differs_from_kafka}." for key in keys if key.differs_from_kafka]
    notes += [
        f"- `{key.name}` is also read under its deprecated name "
        f"{', '.join(f'`{name}`' for name in key.deprecated_names)} (setting both, to different values, is an error)."
        for key in keys if key.deprecated_names
    ]
    if notes:
        yield from ("", "Compared with Kafka:", "", *notes)


def _prefix_section() -> Iterator[str]:
    yield "## Prefixes"
    yield ""
    yield "| prefix | section | checked | origin | read by | meaning |"
    yield "|---|---|---|---|---|---|"
    for prefix in PREFIXES:
        if prefix.passes_through:
            checked = "no: passed on"
        else:
            assert prefix.suffix is not None and prefix.value is not None
            checked = (f"key {prefix.suffix.describe()}; value {prefix.value.describe()}; "
                       f"at most {prefix.max_entries} entries")
        cells = [f"`{prefix.prefix}`", prefix.group.value, checked, _origin(prefix.origin),
                 _read_by(prefix.read_by), prefix.meaning]
        yield "| " + " | ".join(_cell(cell) for cell in cells) + " |"
    yield ""
    yield ("`StreamsConfig.with_prefix(\"consumer.\")` returns a prefix's entries without the prefix; "
           "`StreamsConfig.client_properties(KafkaClient.RESTORE_CONSUMER)` builds one client's properties: "
           "`bootstrap.servers`, `security.protocol`, the `ssl.` and `sasl.` entries, then `consumer.`, then "
           "`restore.consumer.` (later ones win). Values are passed to confluent-kafka as given, so they take "
           "librdkafka's names. `client.tag.` entries are this host's tags: `StreamsConfig.client_tags`.")


def render() -> str:
    """The whole page."""
    lines = [_INTRO]
    for group in Group:
        keys = [key for key in KEYS if key.group is group]
        if not keys:
            continue
        lines += [f"## {group.value}", "", _GROUP_INTROS[group], "", *_key_rows(keys), *_differences(keys), ""]
    lines += [*_prefix_section(), "", _OUTRO]
    return "\n".join(lines).rstrip("\n") + "\n"
