"""Reading a set of properties against the registry: every problem found at once, each a one-line
ConfigError; the result an immutable, typed `StreamsConfig`."""

from __future__ import annotations

import difflib
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar, overload

from streams_rt.config.errors import ConfigError, ConfigErrors
from streams_rt.config.keys import ConfigKey, ConfigPrefix, Required
from streams_rt.config.registry import (
    BOOTSTRAP_SERVERS,
    BY_DEPRECATED_NAME,
    BY_NAME,
    CLIENT_TAG_PREFIX,
    KEYS,
    PREFIXES,
    RULES,
    SECURITY_PROTOCOL,
)
from streams_rt.config.values import Invalid

T = TypeVar("T")

_EMPTY: Mapping[str, object] = MappingProxyType({})


class KafkaClient(enum.Enum):
    """A kind of Kafka client and the prefixes whose entries it takes, later ones winning (Kafka
    Streams' order: `consumer.` then `main.consumer.` or `restore.consumer.`)."""

    MAIN_CONSUMER = ("consumer.", "main.consumer.")
    RESTORE_CONSUMER = ("consumer.", "restore.consumer.")
    PRODUCER = ("producer.",)
    ADMIN = ("admin.",)


@dataclass(frozen=True)
class StreamsConfig:
    """Resolved configuration. `get` returns a key's parsed value (its default when not given);
    `originals` is what the caller passed, untouched."""

    values: Mapping[str, object]
    originals: Mapping[str, object]
    given: frozenset[str]
    client_tags: Mapping[str, str]
    passed_through: Mapping[str, Mapping[str, object]]  # prefix -> {key without the prefix: value}

    @overload
    def get(self, key: ConfigKey[T]) -> T: ...
    @overload
    def get(self, key: str) -> object: ...

    def get(self, key: ConfigKey[Any] | str) -> object:
        """The value of a registered key (a ConfigKey, whose type the result has, or its name)."""
        name = key if isinstance(key, str) else key.name
        if name not in self.values:
            raise KeyError(f"{name!r} is not a registered configuration key")
        return self.values[name]

    def is_set(self, key: ConfigKey[Any] | str) -> bool:
        """Whether the caller gave this key (under its name or a deprecated one) rather than its default."""
        return (key if isinstance(key, str) else key.name) in self.given

    def with_prefix(self, prefix: str) -> Mapping[str, object]:
        """The entries given under a pass-through prefix such as `consumer.`, with the prefix removed."""
        if prefix not in self.passed_through:
            raise KeyError(f"{prefix!r} is not a pass-through prefix")
        return self.passed_through[prefix]

    def client_properties(self, client: KafkaClient) -> dict[str, object]:
        """The properties for one Kafka client (confluent-kafka): the cluster and security settings,
        then the client's own prefixed entries, which win."""
        servers = self.get(BOOTSTRAP_SERVERS)
        properties: dict[str, object] = {
            BOOTSTRAP_SERVERS.name: ",".join(servers),
            SECURITY_PROTOCOL.name: self.get(SECURITY_PROTOCOL),
        }
        for prefix in ("ssl.", "sasl."):
            properties.update({prefix + key: value for key, value in self.with_prefix(prefix).items()})
        for prefix in client.value:
            properties.update(self.with_prefix(prefix))
        return properties


def resolve(props: Mapping[str, object]) -> StreamsConfig:
    """Check `props` against the registry and parse every value (strings or Python values).

    Raises ConfigError for one problem, ConfigErrors (a ValueError and an ExceptionGroup of
    ConfigErrors) for several: unknown keys (with the closest valid name), values out of range,
    missing required keys, rules between keys."""
    originals = MappingProxyType(dict(props))
    errors: list[ConfigError] = []
    registered, prefixed = _sort(originals, errors)
    values = _parse(registered, errors)
    errors.extend(_broken_rules(values))
    client_tags = _client_tags(prefixed[CLIENT_TAG_PREFIX.prefix], errors)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)
    return StreamsConfig(
        values=MappingProxyType(values),
        originals=originals,
        given=frozenset(registered),
        client_tags=MappingProxyType(client_tags),
        passed_through=MappingProxyType({
            prefix.prefix: MappingProxyType(prefixed[prefix.prefix]) for prefix in PREFIXES if prefix.passes_through
        }),
    )


def _sort(
    originals: Mapping[str, object], errors: list[ConfigError]
) -> tuple[dict[str, tuple[str, object]], dict[str, dict[str, object]]]:
    """Registered keys (name -> the name given, a deprecated one maybe, and the value) and prefixed
    entries (prefix -> {rest of the key: value}); unknown keys become errors."""
    registered: dict[str, tuple[str, object]] = {}
    prefixed: dict[str, dict[str, object]] = {prefix.prefix: {} for prefix in PREFIXES}
    for name, value in originals.items():
        if not isinstance(name, str):
            errors.append(ConfigError(str(name), value, f"configuration keys must be strings, got {name!r}"))
        elif name in BY_NAME or name in BY_DEPRECATED_NAME:
            key = BY_NAME.get(name) or BY_DEPRECATED_NAME[name]
            if key.name in registered and registered[key.name][1] != value:
                other = registered[key.name][0]
                errors.append(ConfigError(name, value, f"{name} and {other} name the same key; set only {key.name}"))
            registered[key.name] = (name, value)
        elif (prefix := _prefix_of(name)) is not None:
            prefixed[prefix.prefix][name.removeprefix(prefix.prefix)] = value
        else:
            errors.append(ConfigError(name, value, _unknown(name)))
    return registered, prefixed


def _parse(registered: Mapping[str, tuple[str, object]], errors: list[ConfigError]) -> dict[str, object]:
    """Every registered key's value: parsed when given, its default otherwise (an error if required)."""
    values: dict[str, object] = {}
    for key in KEYS:
        if key.name in registered:
            given_as, value = registered[key.name]
            try:
                values[key.name] = key.parse(value)
            except Invalid as invalid:
                reason = f"{given_as} {invalid.phrase}, got {invalid.shown!r}"
                errors.append(ConfigError(given_as, value, _one_line(reason)))
        elif isinstance(key.default, Required):
            errors.append(ConfigError(key.name, None, f"{key.name} is required"))
        else:
            values[key.name] = key.default_value()
    return values


def _prefix_of(name: str) -> ConfigPrefix | None:
    return next((prefix for prefix in PREFIXES if name.startswith(prefix.prefix)), None)


def _unknown(name: str) -> str:
    candidates = list(BY_NAME) + [_with_prefix_fixed(name, prefix.prefix) for prefix in PREFIXES]
    close = difflib.get_close_matches(name, candidates, n=1)
    if close:
        return _one_line(f"unknown configuration key {name!r}; did you mean {close[0]!r}?")
    return _one_line(
        f"unknown configuration key {name!r}; docs/configuration.md lists the keys "
        "(Kafka client settings take a prefix such as consumer. or producer.)"
    )


def _with_prefix_fixed(name: str, prefix: str) -> str:
    """`name` with its first segments replaced by `prefix` ("comsumer.max.poll.records" ->
    "consumer.max.poll.records"), so that a misspelt prefix is suggested with the rest of the key."""
    segments = name.split(".")
    depth = prefix.count(".")
    return prefix + ".".join(segments[depth:]) if len(segments) > depth else prefix


def _broken_rules(values: Mapping[str, object]) -> list[ConfigError]:
    found = []
    for rule in RULES:
        if all(name in values for name in rule.keys) and (reason := rule.problem(values)) is not None:
            found.append(ConfigError(rule.key, values[rule.key], reason))
    return found


def _client_tags(entries: Mapping[str, object], errors: list[ConfigError]) -> dict[str, str]:
    """Check `client.tag.<key>=<value>` entries as Kafka Streams does (count, key and value lengths)."""
    prefix = CLIENT_TAG_PREFIX
    assert prefix.suffix is not None and prefix.value is not None and prefix.max_entries is not None
    tags: dict[str, str] = {}
    for suffix, value in entries.items():
        name = prefix.prefix + suffix
        try:
            tag = prefix.suffix.parse(suffix)
        except Invalid as invalid:
            errors.append(ConfigError(name, value, _one_line(f"{name}: the tag key {invalid.phrase}, got {suffix!r}")))
            continue
        try:
            tags[tag] = prefix.value.parse(value)
        except Invalid as invalid:
            errors.append(ConfigError(name, value, _one_line(f"{name} {invalid.phrase}, got {invalid.shown!r}")))
    if len(entries) > prefix.max_entries:
        errors.append(ConfigError(
            prefix.prefix, dict(entries),
            f"at most {prefix.max_entries} {prefix.prefix}<key> entries may be set, got {len(entries)}",
        ))
    return tags


def _one_line(message: str) -> str:
    """Reasons quote user values with repr, which escapes newlines; this keeps any other one line too."""
    return " ".join(message.splitlines())
