"""Hypothesis strategies for the values a key's type accepts and for values it must refuse, derived
from the type itself, so a new key is covered without a new test. A new kind of value fails here
with "no strategy" until it gets its strategies."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from streams_rt.config.keys import ConfigKey, LessThan, SetTogether
from streams_rt.config.registry import BY_NAME, RULES
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
    ValueType,
)


class Setter:
    """An object a `module:attr` reference can name: a RocksDB config setter that changes nothing."""

    def set_config(self, store_name: str, options: object, configs: object) -> None:
        """Leaves the options as they are."""

    class Nested:
        def set_config(self, store_name: str, options: object, configs: object) -> None:
            """Leaves the options as they are."""


IMPORTABLE = ("tests.config.strategies:Setter", "tests.config.strategies:Setter.Nested")
UNIMPORTABLE = ("json", "json:", ":dumps", "json:no_such_name", "no_such_module_xyz:thing", "json:dumps.nope",
                "json:dumps", "tests.config.strategies:Setter.set_config")

_hosts = st.sampled_from(["localhost", "127.0.0.1", "broker-1.example.com", "[::1]", "PLAINTEXT://kafka"])
_words = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20)


def _trimmed(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Values as Kafka would keep them: no surrounding whitespace (it is trimmed off)."""
    return strategy.filter(lambda value: value == value.strip() and value != "")


def valid(value_type: ValueType[Any]) -> st.SearchStrategy[Any]:
    """Python values `value_type` accepts (its parse may normalise them, e.g. str to Path)."""
    if isinstance(value_type, Nullable):
        return st.none() | valid(value_type.inner)
    if isinstance(value_type, Boolean):
        return st.booleans() | st.sampled_from(["true", "false", "TRUE", "False", " true "])
    if isinstance(value_type, Integer):
        low = value_type.lowest if value_type.minimum is None else value_type.minimum
        high = value_type.highest if value_type.maximum is None else value_type.maximum
        numbers = st.integers(low, high) | st.sampled_from(value_type.also or (low,))
        if isinstance(value_type, Duration):
            longest = datetime.timedelta.max // datetime.timedelta(milliseconds=1)
            durations = numbers.filter(lambda ms: ms <= longest).map(lambda ms: datetime.timedelta(milliseconds=ms))
            return numbers | durations
        return numbers
    if isinstance(value_type, Choice):
        spelled = st.sampled_from(value_type.choices)
        return spelled | spelled.map(str.lower) if value_type.ignore_case else spelled
    if isinstance(value_type, HostPort):
        return st.builds(lambda host, port: f"{host}:{port}", _hosts, st.integers(1, 65535))
    if isinstance(value_type, Text):
        pattern = value_type.pattern
        return _trimmed(st.from_regex(pattern, fullmatch=True) if pattern.pattern != ".+" else _words).filter(
            lambda value: value_type.max_length is None or len(value) <= value_type.max_length
        )
    if isinstance(value_type, ListOf):
        return st.lists(valid(value_type.item), min_size=value_type.min_items, max_size=value_type.max_items or 8)
    if isinstance(value_type, FilePath):
        text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=30)
        return _trimmed(text).filter(lambda value: str(Path(value)) == str(Path(value)).strip())
    if isinstance(value_type, ObjectReference):
        return st.sampled_from(IMPORTABLE)
    raise NotImplementedError(f"no strategy for {type(value_type).__name__}")


def invalid(value_type: ValueType[Any]) -> st.SearchStrategy[object]:
    """Values `value_type` must refuse."""
    if isinstance(value_type, Nullable):
        return invalid(value_type.inner).filter(
            lambda value: value is not None
            and not (value_type.blank_is_unset and isinstance(value, str) and not value.strip())
        )
    wrong_kind = st.sampled_from([1.5, b"bytes", object()])
    if isinstance(value_type, Boolean):
        return st.sampled_from(["", "yes", "1", "0", "t", "truee", "on"]) | st.sampled_from([0, 1, None]) | wrong_kind
    if isinstance(value_type, Integer):
        below = [] if value_type.minimum is None else [st.integers(max_value=value_type.minimum - 1)]
        above = [] if value_type.maximum is None else [st.integers(min_value=value_type.maximum + 1)]
        out_of_range = st.integers(min_value=value_type.highest + 1) | st.integers(max_value=value_type.lowest - 1)
        numbers = st.one_of(out_of_range, *below, *above).filter(lambda n: n not in value_type.also)
        not_numbers = st.sampled_from(["", "ten", "1.0", "1e3", "0x10", "1_000", "--1"]) | st.booleans()
        return numbers | numbers.map(str) | not_numbers | wrong_kind
    if isinstance(value_type, Choice):
        folded = {choice.lower() for choice in value_type.choices}
        return st.text(max_size=12).filter(
            lambda value: value.strip() not in value_type.choices
            and not (value_type.ignore_case and value.strip().lower() in folded)
        ) | wrong_kind
    if isinstance(value_type, HostPort):
        return st.sampled_from(["", "localhost", "localhost:", ":9092", "localhost:0", "localhost:65536",
                                "local host:1", "a:b", "a:1,b:2"]) | wrong_kind
    if isinstance(value_type, Text):
        too_long = [] if value_type.max_length is None else [st.text(min_size=value_type.max_length + 1).map(
            lambda value: "x" * (value_type.max_length or 0) + "y" + value.strip())]
        unmatched = st.text(max_size=12).filter(lambda value: not value_type.pattern.fullmatch(value.strip()))
        return st.one_of(unmatched, *too_long) | wrong_kind
    if isinstance(value_type, ListOf):
        bad_item = invalid(value_type.item).filter(lambda value: isinstance(value, str) and "," not in value)
        with_bad_item = st.lists(valid(value_type.item), max_size=3).flatmap(
            lambda items: bad_item.map(lambda bad: [*items, bad])
        )
        joined = with_bad_item.map(",".join).filter(lambda value: value.strip() != "")
        options = [with_bad_item, joined, st.just(3), st.just({"a": "b"})]
        if value_type.max_items is not None:
            options.append(st.lists(valid(value_type.item), min_size=value_type.max_items + 1,
                                    max_size=value_type.max_items + 3))
        if value_type.min_items:
            options.append(st.just(""))
        return st.one_of(*options)
    if isinstance(value_type, FilePath):
        return st.sampled_from(["", "   ", 3, None, b"/tmp"])
    if isinstance(value_type, ObjectReference):
        return st.sampled_from(UNIMPORTABLE) | st.sampled_from([5, "", object()])
    raise NotImplementedError(f"no strategy for {type(value_type).__name__}")


def companions(key: ConfigKey[Any]) -> dict[str, object]:
    """Other keys to set so that `key` may take (almost) any valid value under the rules between keys:
    the bound of a LessThan at its highest, the lower key at its minimum; the partner of a SetTogether
    set (a `key` left unset then breaks the rule: tests assume it away)."""
    extra: dict[str, object] = {}
    for rule in RULES:
        if isinstance(rule, LessThan) and rule.key == key.name:
            bound_type = BY_NAME[rule.bound].type
            assert isinstance(bound_type, Integer)
            extra[rule.bound] = bound_type.highest
        elif isinstance(rule, LessThan) and rule.bound == key.name:
            low_type = BY_NAME[rule.key].type
            assert isinstance(low_type, Integer) and low_type.minimum is not None
            extra[rule.key] = low_type.minimum
        elif isinstance(rule, SetTogether) and key.name in rule.keys:
            (partner,) = [name for name in rule.keys if name != key.name]
            extra[partner] = "partner.pem"
    return extra
