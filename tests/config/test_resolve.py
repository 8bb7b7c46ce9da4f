"""resolve() against the whole registry: defaults round-trip, string and Python forms agree, every
validation refuses with one line naming the key, unknown keys point at the closest valid one."""

from __future__ import annotations

import datetime
import difflib
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from streams_rt.config import (
    KEYS,
    PREFIXES,
    ConfigError,
    ConfigErrors,
    ConfigKey,
    KafkaClient,
    StreamsConfig,
    registry,
    resolve,
)
from streams_rt.config.keys import Required
from streams_rt.config.registry import (
    BY_NAME,
    DESERIALIZATION_EXCEPTION_HANDLER,
    NUM_STANDBY_REPLICAS,
    RULES,
    STATE_DIR,
    UPGRADE_FROM,
    default_state_dir,
)
from streams_rt.protocol import ACCEPTED_UPGRADE_FROM, UpgradeFromError, parse_upgrade_from
from tests.config.strategies import Setter, companions, invalid, valid

BASE: dict[str, object] = {"application.id": "app", "bootstrap.servers": "localhost:9092"}
KEY_IDS = [key.name for key in KEYS]


def resolve_with(key: ConfigKey[Any], value: object) -> StreamsConfig:
    props = {**BASE, **companions(key)}
    props[key.name] = value
    return resolve(props)


def obeys_rules(key: ConfigKey[Any], value: object) -> bool:
    values = {**{name: BY_NAME[name].parse(v) for name, v in companions(key).items()}, key.name: value}
    return all(rule.problem(values) is None for rule in RULES if all(name in values for name in rule.keys))


def single_error(props: dict[Any, object]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        resolve(props)
    return caught.value


# ---- defaults -----------------------------------------------------------------------------------
def test_only_application_id_and_bootstrap_servers_are_required() -> None:
    assert [key.name for key in KEYS if isinstance(key.default, Required)] == list(BASE)
    errors = resolve_errors({})
    assert [str(error) for error in errors] == ["application.id is required", "bootstrap.servers is required"]


def resolve_errors(props: dict[str, object]) -> list[ConfigError]:
    try:
        resolve(props)
    except ConfigErrors as errors:
        return list(errors.errors)
    except ConfigError as error:
        return [error]
    raise AssertionError(f"resolve accepted {props}")


@pytest.mark.parametrize("key", [key for key in KEYS if not isinstance(key.default, Required)], ids=lambda k: k.name)
def test_every_default_round_trips(key: ConfigKey[Any]) -> None:
    default = key.default_value()
    from_nothing = resolve(BASE).get(key)
    assert from_nothing == default
    assert not resolve(BASE).is_set(key)
    if default is None:
        return
    assert resolve_with(key, default).get(key) == default
    assert resolve_with(key, key.type.render(default)).get(key) == default
    assert resolve_with(key, key.type.render(default)).is_set(key)


def test_the_state_dir_default_is_computed_on_this_machine_but_documented_portably() -> None:
    assert resolve(BASE).get(STATE_DIR) == default_state_dir()
    assert STATE_DIR.shown_default() == "`$TMPDIR/streams-rt`"


# ---- valid values -------------------------------------------------------------------------------
@pytest.mark.parametrize("key", KEYS, ids=KEY_IDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_string_and_python_forms_parse_to_the_same_value(key: ConfigKey[Any], data: st.DataObject) -> None:
    value = data.draw(valid(key.type))
    parsed = key.parse(value)
    assume(obeys_rules(key, parsed))
    config = resolve_with(key, value)
    assert config.get(key) == parsed
    if parsed is not None:
        as_string = key.type.render(parsed)
        assert resolve_with(key, as_string).get(key) == parsed
        assert resolve_with(key, f"  {as_string} ").get(key) == parsed
    assert config.originals[key.name] is value


def test_numbers_and_durations_parse_from_strings_and_timedeltas() -> None:
    config = resolve({**BASE, "num.standby.replicas": " 2 ",
                      "probing.rebalance.interval.ms": datetime.timedelta(minutes=5),
                      "rack.aware.assignment.tags": "zone, rack", "state.dir": Path("/var/lib/x")})
    assert config.get("num.standby.replicas") == 2
    assert config.get("probing.rebalance.interval.ms") == 300_000
    assert config.get("rack.aware.assignment.tags") == ("zone", "rack")
    assert config.get("state.dir") == Path("/var/lib/x")
    assert resolve({**BASE, "security.protocol": "sasl_ssl"}).get("security.protocol") == "SASL_SSL"


def test_object_references_are_imported_when_read() -> None:
    config = resolve({**BASE, "rocksdb.config.setter": "tests.config.strategies:Setter"})
    assert config.get("rocksdb.config.setter") is Setter
    setter = Setter()
    assert resolve({**BASE, "rocksdb.config.setter": setter}).get("rocksdb.config.setter") is setter
    error = single_error({**BASE, "rocksdb.config.setter": "json:dumps"})
    assert str(error) == "rocksdb.config.setter must have a set_config method, got 'json:dumps'"


# ---- invalid values -----------------------------------------------------------------------------
@pytest.mark.parametrize("key", KEYS, ids=KEY_IDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_validation_refuses_with_one_line_naming_the_key(key: ConfigKey[Any], data: st.DataObject) -> None:
    value = data.draw(invalid(key.type))
    error = single_error({**BASE, **companions(key), key.name: value})
    assert error.key == key.name
    assert error.value is value
    assert str(error).startswith(f"{key.name} ")
    assert "\n" not in str(error) and "\r" not in str(error)


@pytest.mark.parametrize(
    "props, message",
    [
        ({"num.standby.replicas": -1}, "num.standby.replicas must be >= 0, got -1"),
        ({"num.standby.replicas": "-1"}, "num.standby.replicas must be >= 0, got -1"),
        ({"max.warmup.replicas": 0}, "max.warmup.replicas must be >= 1, got 0"),
        ({"probing.rebalance.interval.ms": 59_999}, "probing.rebalance.interval.ms must be >= 60000, got 59999"),
        ({"acceptable.recovery.lag": "lots"}, "acceptable.recovery.lag must be a whole number (long), got 'lots'"),
        ({"num.stream.threads": True}, "num.stream.threads must be a whole number (int), got True"),
        ({"coordinator.port": 70_000}, "coordinator.port must be between 0 and 65535, got 70000"),
        ({"replication.factor": 0}, "replication.factor must be >= 1 or -1, got 0"),
        ({"processing.guarantee": "exactly_once"},
         "processing.guarantee must be one of at_least_once, exactly_once_v2, got 'exactly_once'"),
        ({"application.id": "a/b"}, "application.id must be a non-empty name without '/', got 'a/b'"),
        ({"bootstrap.servers": "kafka"},
         "bootstrap.servers element 'kafka' must be host:port with a port from 1 to 65535, got 'kafka'"),
        ({"rack.aware.assignment.tags": "a,,b"},
         "rack.aware.assignment.tags element '' must be non-empty, without ',', got 'a,,b'"),
        ({"upgrade.from": 2.3}, "upgrade.from must be a string, got 2.3"),
        ({"heartbeat.interval.ms": 45_000},
         "heartbeat.interval.ms must be lower than session.timeout.ms, got 45000 >= 45000"),
        ({"group.instance.id": "host 1"},
         "group.instance.id must be ASCII letters, digits, '.', '_' and '-', got 'host 1'"),
    ],
)
def test_messages_read_as_one_line(props: dict[str, object], message: str) -> None:
    assert str(single_error({**BASE, **props})) == message


def test_a_bad_object_reference_says_why() -> None:
    error = single_error({**BASE, "rocksdb.config.setter": "no_such_module_xyz:Setter"})
    assert str(error) == ("rocksdb.config.setter must name an importable object (ModuleNotFoundError: "
                          "No module named 'no_such_module_xyz'), got 'no_such_module_xyz:Setter'")


def test_several_problems_come_together() -> None:
    props = {"application.id": "", "num.standby.replicas": -1, "num.standby.replica": 1}
    errors = resolve_errors(props)
    assert [error.key for error in errors] == ["num.standby.replica", "application.id", "bootstrap.servers",
                                               "num.standby.replicas"]
    with pytest.raises(ValueError, match="invalid configuration: unknown configuration key 'num.standby.replica'"):
        resolve(props)


def test_non_string_keys_are_refused() -> None:
    props: dict[Any, object] = {**BASE, 3: "x"}
    error = single_error(props)
    assert str(error) == "configuration keys must be strings, got 3"


# ---- unknown keys ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "typo, meant",
    [("num.standby.replica", "num.standby.replicas"), ("state.dirr", "state.dir"),
     ("applicationid", "application.id"), ("probing.rebalance.interval", "probing.rebalance.interval.ms"),
     ("comsumer.max.poll.records", "consumer.max.poll.records"), ("restore.consumr.x", "restore.consumer.x")],
)
def test_unknown_keys_name_the_closest_valid_key(typo: str, meant: str) -> None:
    error = single_error({**BASE, typo: "1"})
    assert error.key == typo
    assert str(error) == f"unknown configuration key {typo!r}; did you mean {meant!r}?"


def test_an_unknown_key_far_from_every_key_points_at_the_docs() -> None:
    assert "docs/configuration.md" in str(single_error({**BASE, "zzz": 1}))


def _mutations(name: str) -> st.SearchStrategy[str]:
    position = st.integers(0, len(name) - 1)
    letter = st.sampled_from("abcdefghijklmnopqrstuvwxyz.")
    return st.one_of(
        position.map(lambda i: name[:i] + name[i + 1:]),
        st.tuples(position, letter).map(lambda p: name[:p[0]] + p[1] + name[p[0] + 1:]),
        st.tuples(position, letter).map(lambda p: name[:p[0]] + p[1] + name[p[0]:]),
    )


@pytest.mark.parametrize("key", KEYS, ids=KEY_IDS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_one_letter_typo_suggests_a_key_at_least_as_close(key: ConfigKey[Any], data: st.DataObject) -> None:
    typo = data.draw(_mutations(key.name))
    known = set(BY_NAME) | {old for k in KEYS for old in k.deprecated_names}
    assume(typo not in known and not any(typo.startswith(prefix.prefix) for prefix in PREFIXES))
    error = single_error({**BASE, typo: "1"})
    assert error.key == typo and "did you mean" in str(error), str(error)
    suggestion = str(error).split("did you mean ")[1].strip("'?")
    ratio = difflib.SequenceMatcher(None, typo, suggestion).ratio()
    assert ratio >= difflib.SequenceMatcher(None, typo, key.name).ratio()


# ---- deprecated names, prefixes, rules ---------------------------------------------------------------
def test_a_deprecated_name_sets_the_key() -> None:
    old = DESERIALIZATION_EXCEPTION_HANDLER.deprecated_names[0]
    config = resolve({**BASE, old: "log_and_continue"})
    assert config.get(DESERIALIZATION_EXCEPTION_HANDLER) == "log_and_continue"
    assert config.is_set(DESERIALIZATION_EXCEPTION_HANDLER)
    assert resolve({**BASE, old: "fail", DESERIALIZATION_EXCEPTION_HANDLER.name: "fail"}).get(
        DESERIALIZATION_EXCEPTION_HANDLER) == "fail"
    error = single_error({**BASE, old: "fail", DESERIALIZATION_EXCEPTION_HANDLER.name: "log_and_continue"})
    assert "name the same key; set only deserialization.exception.handler" in str(error)


def test_a_bad_value_under_a_deprecated_name_is_reported_under_that_name() -> None:
    old = DESERIALIZATION_EXCEPTION_HANDLER.deprecated_names[0]
    error = single_error({**BASE, old: "retry"})
    assert error.key == old and str(error).startswith(f"{old} must be one of fail, log_and_continue")


def test_no_registered_name_hides_under_a_prefix_and_names_are_unique() -> None:
    names = [key.name for key in KEYS] + [old for key in KEYS for old in key.deprecated_names]
    assert len(names) == len(set(names))
    for name in names:
        assert not any(name.startswith(prefix.prefix) for prefix in PREFIXES), name


def test_prefixed_keys_pass_through_untouched() -> None:
    secret = "org.apache.kafka.common.security.plain.PlainLoginModule required;"
    config = resolve({**BASE, "consumer.max.poll.records": "500", "restore.consumer.max.poll.records": 2000,
                      "producer.linger.ms": "5", "sasl.jaas.config": secret, "spark.sql.shuffle.partitions": "4",
                      "security.protocol": "SASL_SSL", "bootstrap.servers": "a:1, b:2"})
    assert config.with_prefix("consumer.") == {"max.poll.records": "500"}
    assert config.with_prefix("spark.") == {"sql.shuffle.partitions": "4"}
    assert config.client_properties(KafkaClient.RESTORE_CONSUMER) == {
        "bootstrap.servers": "a:1,b:2", "security.protocol": "SASL_SSL", "sasl.jaas.config": secret,
        "max.poll.records": 2000,
    }
    assert config.client_properties(KafkaClient.MAIN_CONSUMER)["max.poll.records"] == "500"
    assert config.client_properties(KafkaClient.PRODUCER)["linger.ms"] == "5"
    with pytest.raises(KeyError):
        config.with_prefix("client.tag.")


def test_client_tags_are_checked_as_kafka_streams_checks_them() -> None:
    config = resolve({**BASE, "client.tag.zone": " eu-1 ", "client.tag.rack": ""})
    assert config.client_tags == {"zone": "eu-1", "rack": ""}
    errors = resolve_errors({**BASE, **{f"client.tag.t{i}": "v" for i in range(6)}})
    assert [str(error) for error in errors] == ["at most 5 client.tag.<key> entries may be set, got 6"]
    long_key = "k" * 21
    assert str(single_error({**BASE, f"client.tag.{long_key}": "v"})) == (
        f"client.tag.{long_key}: the tag key must be at most 20 characters, got {long_key!r}")
    assert str(single_error({**BASE, "client.tag.zone": "v" * 31})) == (
        f"client.tag.zone must be at most 30 characters, got {'v' * 31!r}")
    assert str(single_error({**BASE, "client.tag.": "v"})) == "client.tag.: the tag key must be non-empty, got ''"


def test_the_heartbeat_must_stay_below_the_session_timeout() -> None:
    assert resolve({**BASE, "session.timeout.ms": "10000", "heartbeat.interval.ms": "9999"}).get(
        "heartbeat.interval.ms") == 9999
    error = single_error({**BASE, "session.timeout.ms": 10_000, "heartbeat.interval.ms": 10_000})
    assert error.key == "heartbeat.interval.ms"


def test_upgrade_from_takes_exactly_what_the_protocol_accepts() -> None:
    for release in ACCEPTED_UPGRADE_FROM:
        parse_upgrade_from(release)
        assert resolve({**BASE, "upgrade.from": release}).get(UPGRADE_FROM) == release
    for release in ("4.0", "0.9", "2.3.1", ""):
        with pytest.raises(UpgradeFromError):
            parse_upgrade_from(release)
        assert single_error({**BASE, "upgrade.from": release}).key == "upgrade.from"


# ---- the resolved config --------------------------------------------------------------------------
def test_the_resolved_config_is_immutable_and_keeps_the_originals() -> None:
    props: dict[str, object] = {**BASE, "num.standby.replicas": "1"}
    config = resolve(props)
    props["num.standby.replicas"] = "5"
    assert config.originals["num.standby.replicas"] == "1"
    assert config.get(NUM_STANDBY_REPLICAS) == 1
    with pytest.raises(TypeError):
        cast(dict[str, object], config.values)["num.standby.replicas"] = 3
    with pytest.raises(TypeError):
        cast(dict[str, object], config.originals)["x"] = 1
    with pytest.raises(AttributeError):
        config.values = {}  # type: ignore[misc]  # what the types forbid fails at run time too


def test_asking_for_an_unregistered_key_is_a_bug_not_a_default() -> None:
    with pytest.raises(KeyError, match="not a registered configuration key"):
        resolve(BASE).get("num.standby.replica")


def test_every_key_defined_in_the_registry_module_is_registered() -> None:
    defined = {value.name for value in vars(registry).values() if isinstance(value, ConfigKey)}
    assert defined == set(BY_NAME), f"defined but missing from KEYS: {sorted(defined - set(BY_NAME))}"


@pytest.mark.parametrize("key", KEYS, ids=KEY_IDS)
def test_every_key_says_what_it_means_in_one_line(key: ConfigKey[Any]) -> None:
    for text in (key.meaning, key.differs_from_kafka or ""):
        assert "\n" not in text and not text.endswith("."), (key.name, text)
    assert key.meaning
