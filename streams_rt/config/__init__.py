"""The one configuration registry: every key streams_rt reads (Kafka Streams' name, type, default,
meaning, validation) defined once in `registry.py`; `resolve(props)` checks a set of properties
against it and returns a typed, immutable `StreamsConfig`. A leaf: it imports only `protocol` (for
the `upgrade.from` releases), and every other part may import it."""

from streams_rt.config.errors import ConfigError, ConfigErrors
from streams_rt.config.keys import REQUIRED, Computed, ConfigKey, ConfigPrefix, Group, LessThan, Origin, SetTogether
from streams_rt.config.registry import KEYS, PREFIXES, RULES
from streams_rt.config.resolve import KafkaClient, StreamsConfig, resolve

__all__ = [
    "KEYS",
    "PREFIXES",
    "REQUIRED",
    "RULES",
    "Computed",
    "ConfigError",
    "ConfigErrors",
    "ConfigKey",
    "ConfigPrefix",
    "Group",
    "KafkaClient",
    "LessThan",
    "Origin",
    "SetTogether",
    "StreamsConfig",
    "resolve",
]
