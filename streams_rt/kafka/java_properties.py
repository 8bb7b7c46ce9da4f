"""Java `.properties` text that `java.util.Properties.load` reads back exactly.

Kafka (`server.properties`) and log4j2 (`log4j2.properties`) both load their files with
`Properties.load(InputStream)`: ISO-8859-1, backslash escapes, `#`/`!` comments, leading blanks
dropped. A path written verbatim loses its backslashes and turns UTF-8 bytes into other characters,
so every value goes through `format_properties`, whose output is plain ASCII."""

from __future__ import annotations

from collections.abc import Mapping

# Java's own Properties.store escapes these (`=`, `:`, `#`, `!` only matter at some positions; escaping
# them everywhere is always read back the same).
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f",
            "=": "\\=", ":": "\\:", "#": "\\#", "!": "\\!"}


def format_properties(entries: Mapping[str, str]) -> str:
    """One `key=value` line per entry, escaped so that Java loads exactly `entries`."""
    return "".join(f"{_escape(key, all_spaces=True)}={_escape(value, all_spaces=False)}\n"
                   for key, value in entries.items())


def _escape(text: str, all_spaces: bool) -> str:
    """A space ends a key, and leading blanks of a value are skipped: escape those spaces. Anything
    outside printable ASCII becomes `\\uXXXX` UTF-16 code units (two for characters beyond U+FFFF)."""
    escaped = []
    for index, char in enumerate(text):
        if char == " ":
            escaped.append("\\ " if all_spaces or index == 0 else " ")
        elif char in _ESCAPES:
            escaped.append(_ESCAPES[char])
        elif " " < char <= "~":
            escaped.append(char)
        else:
            units = char.encode("utf-16-be", "surrogatepass")
            escaped.extend(f"\\u{units[i:i + 2].hex().upper()}" for i in range(0, len(units), 2))
    return "".join(escaped)
