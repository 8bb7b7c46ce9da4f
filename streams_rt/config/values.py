"""Kinds of configuration value. Each reads a value given as a string (Spark options and command-line
flags are strings) or as a Python value, checks it, and says in words what it accepts, for the docs.

Strings are read as Kafka's ConfigDef reads them: surrounding whitespace is ignored, numbers are plain
decimal digits, lists are comma-separated."""

from __future__ import annotations

import datetime
import importlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

_DECIMAL = re.compile(r"[+-]?[0-9]+")
_HOST_PORT = re.compile(r"(?:[A-Za-z_]+://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\],]+):([0-9]{1,5})")


class Invalid(ValueError):
    """A value a ValueType rejects. `phrase` completes "<key> ...", e.g. "must be >= 0"; `shown` is
    the value to quote back (the parsed number rather than the string it came from, when it parsed)."""

    def __init__(self, phrase: str, shown: object) -> None:
        super().__init__(phrase)
        self.phrase, self.shown = phrase, shown


class ValueType(ABC, Generic[T]):
    """Parses and checks one kind of value; `name` and `describe()` are what the docs show."""

    name: str

    @abstractmethod
    def parse(self, raw: object) -> T:
        """The checked value of `raw` (a string or a Python value); raises Invalid."""

    def describe(self) -> str:
        """The valid values in a few words ("" when the type says it all)."""
        return ""

    def render(self, value: T) -> str:
        """`value` as a string that `parse` reads back to the same value."""
        return str(value)


def _text(raw: object, name: str) -> str:
    if not isinstance(raw, str):
        raise Invalid(f"must be {name}", raw)
    return raw.strip()


class Integer(ValueType[int]):
    """A whole number in Kafka's INT (32-bit) or LONG (64-bit) range, with optional bounds; `also`
    lists values allowed outside them (replication.factor's -1: the broker's default)."""

    def __init__(
        self, minimum: int | None = None, maximum: int | None = None, *, bits: int = 32, also: tuple[int, ...] = ()
    ) -> None:
        self.name = "int" if bits == 32 else "long"
        self.noun = f"a whole number ({self.name})"
        self.lowest, self.highest = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        self.minimum, self.maximum, self.also = minimum, maximum, also

    def parse(self, raw: object) -> int:
        value = self._number(raw)
        if not self.lowest <= value <= self.highest:
            raise Invalid(f"must be from {self.lowest} to {self.highest}", value)
        if value in self.also:
            return value
        if self.minimum is not None and value < self.minimum:
            raise Invalid(self._bounds_phrase(), value)
        if self.maximum is not None and value > self.maximum:
            raise Invalid(self._bounds_phrase(), value)
        return value

    def _number(self, raw: object) -> int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and _DECIMAL.fullmatch(raw.strip()):
            return int(raw.strip())
        raise Invalid(f"must be {self.noun}", raw)

    def _bounds_phrase(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            phrase = f"must be between {self.minimum} and {self.maximum}"
        elif self.minimum is not None:
            phrase = f"must be >= {self.minimum}"
        else:
            phrase = f"must be <= {self.maximum}"
        return phrase + "".join(f" or {value}" for value in self.also)

    def describe(self) -> str:
        if self.minimum is None and self.maximum is None:
            return ""
        return self._bounds_phrase().removeprefix("must be ")


class Boolean(ValueType[bool]):
    """Kafka's BOOLEAN: `true` or `false` in any case (a Python bool too); nothing else, not 0 or 1."""

    name = "boolean"

    def parse(self, raw: object) -> bool:
        if isinstance(raw, bool):
            return raw
        value = _text(raw, "true or false").lower()
        if value not in ("true", "false"):
            raise Invalid("must be true or false", raw)
        return value == "true"

    def describe(self) -> str:
        return "`true`, `false`"

    def render(self, value: bool) -> str:
        return "true" if value else "false"


class Duration(Integer):
    """Milliseconds, as Kafka's `*.ms` settings (INT or LONG); a Python caller may also pass a
    `datetime.timedelta`."""

    def __init__(self, minimum: int | None = 0, maximum: int | None = None, *, bits: int = 64) -> None:
        super().__init__(minimum, maximum, bits=bits)
        self.name, self.noun = "duration (ms)", "a whole number of milliseconds"

    def _number(self, raw: object) -> int:
        if isinstance(raw, datetime.timedelta):
            milliseconds, rest = divmod(raw, datetime.timedelta(milliseconds=1))
            if rest:
                raise Invalid(f"must be {self.noun}", raw)
            return milliseconds
        return super()._number(raw)


class Text(ValueType[str]):
    """A string, trimmed; `pattern` (a full-match regex) and `max_length` check it, `rule` says the
    pattern in words for the error message and the docs."""

    name = "string"

    def __init__(self, pattern: str = r".+", rule: str = "non-empty", *, max_length: int | None = None) -> None:
        self.pattern, self.rule, self.max_length = re.compile(pattern, re.DOTALL), rule, max_length

    def parse(self, raw: object) -> str:
        value = _text(raw, "a string")
        if not self.pattern.fullmatch(value):
            raise Invalid(f"must be {self.rule}", value)
        if self.max_length is not None and len(value) > self.max_length:
            raise Invalid(f"must be at most {self.max_length} characters", value)
        return value

    def describe(self) -> str:
        limit = f", at most {self.max_length} characters" if self.max_length is not None else ""
        return self.rule + limit


class HostPort(ValueType[str]):
    """`host:port` (an IPv6 host in brackets; an optional `scheme://` as Kafka's bootstrap servers allow)."""

    name = "host:port"

    def parse(self, raw: object) -> str:
        value = _text(raw, "a host:port string")
        match = _HOST_PORT.fullmatch(value)
        if match is None or not 1 <= int(match.group(2)) <= 65535:
            raise Invalid("must be host:port with a port from 1 to 65535", value)
        return value


class Choice(ValueType[str]):
    """One of a fixed set of strings; `ignore_case` as Kafka's case-insensitive validators (the value
    is then returned in its canonical spelling)."""

    name = "enum"

    def __init__(self, choices: Sequence[str], *, ignore_case: bool = False) -> None:
        self.choices, self.ignore_case = tuple(choices), ignore_case

    def parse(self, raw: object) -> str:
        value = _text(raw, "a string")
        for choice in self.choices:
            if value == choice or (self.ignore_case and value.lower() == choice.lower()):
                return choice
        raise Invalid(f"must be one of {', '.join(self.choices)}", value)

    def describe(self) -> str:
        return ", ".join(f"`{choice}`" for choice in self.choices)


class ListOf(ValueType[tuple[str, ...]]):
    """A comma-separated string or a sequence of strings; every element checked by `item`. An empty
    element ("a,,b") is an error rather than dropped."""

    def __init__(self, item: ValueType[str], *, max_items: int | None = None, min_items: int = 0) -> None:
        self.item, self.max_items, self.min_items = item, max_items, min_items
        self.name = f"list of {item.name}"

    def parse(self, raw: object) -> tuple[str, ...]:
        if isinstance(raw, str):
            elements: Sequence[object] = [] if not raw.strip() else raw.split(",")
        elif isinstance(raw, (list, tuple)):
            elements = raw
        else:
            raise Invalid("must be a comma-separated string or a list of strings", raw)
        parsed = []
        for element in elements:
            try:
                parsed.append(self.item.parse(element))
            except Invalid as invalid:
                raise Invalid(f"element {invalid.shown!r} {invalid.phrase}", raw) from None
        value = tuple(parsed)
        if len(value) < self.min_items:
            raise Invalid(f"must have at least {self.min_items} element{'s' if self.min_items != 1 else ''}", raw)
        if self.max_items is not None and len(value) > self.max_items:
            raise Invalid(f"must have at most {self.max_items} elements", value)
        return value

    def describe(self) -> str:
        parts = [f"at least {self.min_items}"] if self.min_items else []
        if self.max_items is not None:
            parts.append(f"at most {self.max_items}")
        most = self.max_items if self.max_items is not None else self.min_items
        count = " and ".join(parts) + (" element" if most == 1 else " elements") if parts else ""
        item = self.item.describe()
        return "; ".join(p for p in (count, f"each {item}" if item else "") if p)

    def render(self, value: tuple[str, ...]) -> str:
        return ",".join(value)


class FilePath(ValueType[Path]):
    name = "path"

    def describe(self) -> str:
        return "non-empty"

    def parse(self, raw: object) -> Path:
        if isinstance(raw, os.PathLike):
            raw = os.fspath(raw)
        value = _text(raw, "a path")
        if not value:
            raise Invalid("must be a non-empty path", raw)
        return Path(value)


class ObjectReference(ValueType[object]):
    """Kafka's CLASS: here a Python object, or `"module:attr"` naming one, imported when read (as
    Kafka loads the class when it parses the config), so a typo fails at start-up, not at first use.
    `needs` names the method the object (or class) must have."""

    name = "object or module:attr"

    def __init__(self, needs: str) -> None:
        self.needs = needs

    def parse(self, raw: object) -> object:
        found = self._import(raw) if isinstance(raw, str) else raw
        if not callable(getattr(found, self.needs, None)):
            raise Invalid(f"must have a {self.needs} method", raw)
        return found

    def _import(self, raw: str) -> object:
        reference = raw.strip()
        module_name, _, attribute = reference.partition(":")
        if not module_name or not attribute:
            raise Invalid("must be an object or a 'module:attr' reference", raw)
        try:
            found: object = importlib.import_module(module_name)
            for part in attribute.split("."):
                found = getattr(found, part)
        except Exception as error:  # noqa: BLE001 - user code: whatever importing it raises is a bad reference
            detail = " ".join(f"{type(error).__name__}: {error}".split())
            raise Invalid(f"must name an importable object ({detail})", raw) from None
        return found

    def describe(self) -> str:
        return f"has a `{self.needs}` method"

    def render(self, value: object) -> str:
        module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
        return f"{module}:{qualname}" if module and qualname else repr(value)


class Nullable(ValueType[T | None], Generic[T]):
    """`inner`, or None for "unset" (a None value, or the key left out); with `blank_is_unset` a blank
    string is unset too, as Kafka's empty-string defaults (`application.server`) mean."""

    def __init__(self, inner: ValueType[T], *, blank_is_unset: bool = False) -> None:
        self.inner, self.name, self.blank_is_unset = inner, inner.name, blank_is_unset

    def parse(self, raw: object) -> T | None:
        if raw is None or (self.blank_is_unset and isinstance(raw, str) and not raw.strip()):
            return None
        return self.inner.parse(raw)

    def describe(self) -> str:
        return self.inner.describe()

    def render(self, value: T | None) -> str:
        return "" if value is None else self.inner.render(value)
