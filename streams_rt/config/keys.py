"""What the registry says about one key (`ConfigKey`), one family of keys sharing a prefix
(`ConfigPrefix`), and a rule between two keys (`LessThan`, `SetTogether`)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from streams_rt.config.values import ValueType

T = TypeVar("T")


class Group(enum.Enum):
    """The part of streams_rt a key configures; the docs have one section each, in this order."""

    APPLICATION = "Application"
    STATE = "State"
    PROCESSING = "Processing"
    ASSIGNMENT = "Assignment"
    MEMBERSHIP = "Group membership"
    COORDINATOR = "Coordinator"
    SPARK_SOURCE = "Spark source"
    QUERIES = "Interactive queries"
    SECURITY = "Security"
    CLIENTS = "Kafka clients"


class Origin(enum.Enum):
    """Whose name a key is: Kafka's (and which component defines it) or ours."""

    STREAMS = "Kafka Streams"
    CONSUMER = "Kafka consumer"
    BROKER = "Kafka broker"
    CONNECT = "Kafka Connect"
    SPARK = "Spark"
    OURS = "streams_rt"


class Required(enum.Enum):
    """The default of a key that has none: leaving it out is an error."""

    REQUIRED = "required"


REQUIRED = Required.REQUIRED


@dataclass(frozen=True)
class Computed(Generic[T]):
    """A default that depends on the machine (computed when a config is resolved); `shown` is how
    the docs write it, so the generated page is the same everywhere."""

    compute: Callable[[], T]
    shown: str


@dataclass(frozen=True)
class ConfigKey(Generic[T]):
    """One configuration key.

    read_by: the code that reads it today ("StateConfig.from_config", "start_coordinator");
        empty for a key registered for work not built yet.
    differs_from_kafka: one line on how our default or validation departs from Kafka's, or None."""

    name: str
    type: ValueType[T]
    default: T | Computed[T] | Required
    group: Group
    meaning: str
    origin: Origin = Origin.STREAMS
    read_by: tuple[str, ...] = ()
    differs_from_kafka: str | None = None
    deprecated_names: tuple[str, ...] = ()

    def parse(self, raw: object) -> T:
        """The value of `raw` for this key (raises values.Invalid)."""
        return self.type.parse(raw)

    def default_value(self) -> T:
        """This key's default (computed now if it depends on the machine); ValueError if required."""
        if isinstance(self.default, Required):
            raise ValueError(f"{self.name} is required: it has no default")
        if isinstance(self.default, Computed):
            return self.default.compute()
        return self.default

    def shown_default(self) -> str:
        """The default as the docs show it."""
        if isinstance(self.default, Required):
            return "(required)"
        if isinstance(self.default, Computed):
            return self.default.shown
        if self.default is None:
            return "unset"
        return self.type.render(self.default) or "empty"


@dataclass(frozen=True)
class ConfigPrefix:
    """Keys that start with `prefix`. With `value` None they pass through to the Kafka clients as
    given (as Kafka Streams passes `consumer.`, `producer.`, ...); otherwise each entry's suffix and
    value are checked here, and at most `max_entries` may be set."""

    prefix: str
    group: Group
    meaning: str
    origin: Origin = Origin.STREAMS
    read_by: tuple[str, ...] = ()
    suffix: ValueType[str] | None = None
    value: ValueType[str] | None = None
    max_entries: int | None = None

    @property
    def passes_through(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class LessThan:
    """`key` must be lower than `bound` (both integers), e.g. heartbeat.interval.ms < session.timeout.ms;
    with `or_equal`, at most `bound`."""

    key: str
    bound: str
    or_equal: bool = False

    @property
    def keys(self) -> tuple[str, str]:
        return self.key, self.bound

    def problem(self, values: Mapping[str, object]) -> str | None:
        """The one-line reason `values` break this rule, or None."""
        low, high = values[self.key], values[self.bound]
        assert isinstance(low, int) and isinstance(high, int), (self.key, low, self.bound, high)
        if low < high or (self.or_equal and low == high):
            return None
        if self.or_equal:
            return f"{self.key} must be at most {self.bound}, got {low} > {high}"
        return f"{self.key} must be lower than {self.bound}, got {low} >= {high}"

    def describe_for(self, name: str) -> str | None:
        """The rule in the docs' "valid values" of key `name` (it is shown on `key` only)."""
        return f"{'<=' if self.or_equal else '<'} `{self.bound}`" if name == self.key else None


@dataclass(frozen=True)
class SetTogether:
    """`key` and `other` are set together or not at all (a certificate chain and its private key)."""

    key: str
    other: str

    @property
    def keys(self) -> tuple[str, str]:
        return self.key, self.other

    def problem(self, values: Mapping[str, object]) -> str | None:
        """The one-line reason `values` break this rule, or None."""
        if (values[self.key] is None) == (values[self.other] is None):
            return None
        given, missing = (self.key, self.other) if values[self.key] is not None else (self.other, self.key)
        return f"{given} is set without {missing}: set both or neither"

    def describe_for(self, name: str) -> str | None:
        """The rule in the docs' "valid values" of key `name` (shown on both)."""
        partner = {self.key: self.other, self.other: self.key}.get(name)
        return f"set together with `{partner}`" if partner is not None else None


Rule = LessThan | SetTogether
