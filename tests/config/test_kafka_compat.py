"""The registry against Kafka's own configuration code (the pinned jars, through
tests/config/java/ConfigHarness.java): every name we borrow exists there, and our default, type and
verdict on any value are Kafka's unless the key's `differs_from_kafka` says how ours departs.

Kafka Connect is not among the pinned jars, so `scheduled.rebalance.max.delay.ms` (Connect's name) is
described by its note only. Values are drawn from printable ASCII: Java's parseInt also reads the
digits of other scripts, which we refuse on purpose."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams_rt.config import KEYS, ConfigError, ConfigKey, Origin, resolve
from streams_rt.config.keys import Required
from streams_rt.config.values import (
    Choice,
    FilePath,
    HostPort,
    Integer,
    ListOf,
    Nullable,
    ObjectReference,
    Text,
    ValueType,
)
from streams_rt.kafka.jvm import REPO_ROOT
from tests.config.strategies import companions, invalid, valid
from tests.protocol.harness import KafkaJava

pytestmark = pytest.mark.jvm

JAVA_SOURCE = REPO_ROOT / "tests" / "config" / "java" / "ConfigHarness.java"
BUILD_DIR = REPO_ROOT / "build" / "config-harness"
WHERE = {Origin.STREAMS: "streams", Origin.CONSUMER: "consumer", Origin.BROKER: "broker"}
KAFKA_KEYS = [key for key in KEYS if key.origin in WHERE]
BASE: dict[str, object] = {"application.id": "app", "bootstrap.servers": "localhost:9092"}
ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126) | st.sampled_from("\t\n"), max_size=12)


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaJava]:
    # JvmSetupError (missing jars: "run `make jars`") propagates as a test error, never a skip.
    java = KafkaJava(JAVA_SOURCE, BUILD_DIR)
    try:
        yield java
    finally:
        java.close()


def describe(kafka: KafkaJava, key: ConfigKey[Any], name: str | None = None) -> dict[str, Any]:
    return kafka.ok("describe", name=name or key.name, where=WHERE[key.origin])


@pytest.mark.parametrize("key", KAFKA_KEYS, ids=lambda key: key.name)
def test_kafka_knows_every_name_we_borrow(kafka: KafkaJava, key: ConfigKey[Any]) -> None:
    for name in (key.name, *key.deprecated_names):
        assert describe(kafka, key, name)["known"], f"Kafka's {WHERE[key.origin]} config has no {name}"


def kafka_form(key: ConfigKey[Any]) -> str | None:
    """Our default as ConfigDef writes defaults (None: required; "" for unset and empty lists)."""
    if isinstance(key.default, Required):
        return None
    if key.default is None:
        return ""
    return key.shown_default().strip("`")


@pytest.mark.parametrize("key", KAFKA_KEYS, ids=lambda key: key.name)
def test_our_default_is_kafkas_unless_the_docs_say_otherwise(kafka: KafkaJava, key: ConfigKey[Any]) -> None:
    theirs = describe(kafka, key)
    assert theirs["required"] == isinstance(key.default, Required), key.name
    if theirs["required"]:
        return
    default = theirs["default"] or ""
    if default.startswith(theirs["tmpdir"]):
        default = "$TMPDIR" + default.removeprefix(theirs["tmpdir"])
    if kafka_form(key) != default:
        note = key.differs_from_kafka or ""
        assert default.rsplit(".", 1)[-1] in note, (
            f"{key.name}: our default {kafka_form(key)!r} is not Kafka's {default!r}, and differs_from_kafka "
            f"does not say so: {note!r}"
        )


def matches_kafka_type(value_type: ValueType[Any], kafka_type: str) -> bool:
    if isinstance(value_type, Nullable):
        return matches_kafka_type(value_type.inner, kafka_type)
    if isinstance(value_type, Integer):
        return kafka_type == ("INT" if value_type.highest == 2**31 - 1 else "LONG")
    if isinstance(value_type, (Text, Choice, HostPort, FilePath)):
        return kafka_type == "STRING"
    if isinstance(value_type, ListOf):
        return kafka_type == "LIST"
    if isinstance(value_type, ObjectReference):
        return kafka_type == "CLASS"
    return False


@pytest.mark.parametrize("key", KAFKA_KEYS, ids=lambda key: key.name)
def test_our_type_is_kafkas_unless_the_docs_say_otherwise(kafka: KafkaJava, key: ConfigKey[Any]) -> None:
    kafka_type = describe(kafka, key)["type"]
    assert matches_kafka_type(key.type, kafka_type) or key.differs_from_kafka, (key.name, kafka_type)


def string_values(key: ConfigKey[Any]) -> st.SearchStrategy[str]:
    """Strings to judge: renderings of valid values, invalid strings, and ASCII noise."""
    rendered = valid(key.type).map(key.parse).filter(lambda value: value is not None).map(key.type.render)
    refused = invalid(key.type).filter(lambda value: isinstance(value, str)).map(str)
    return st.one_of(rendered, refused, ASCII).filter(str.isascii)


def we_accept(key: ConfigKey[Any], value: str) -> bool:
    others = companions(key)
    try:
        resolve({**BASE, **others, key.name: value})
    except ConfigError as error:
        assert error.key == key.name or error.key in others, error  # a rule between keys names either
        return False
    return True


@pytest.mark.parametrize("key", KAFKA_KEYS, ids=lambda key: key.name)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_kafka_and_we_agree_on_every_value_unless_the_docs_say_otherwise(
    kafka: KafkaJava, key: ConfigKey[Any], data: st.DataObject
) -> None:
    value = data.draw(string_values(key))
    theirs = kafka.ok("check", name=key.name, where=WHERE[key.origin], value=value)
    if we_accept(key, value) != theirs["accepted"]:
        assert key.differs_from_kafka, (
            f"{key.name}={value!r}: Kafka {'accepts' if theirs['accepted'] else 'refuses'} it "
            f"({theirs.get('error')}), we do not; differs_from_kafka does not say why"
        )
