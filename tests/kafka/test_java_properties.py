"""Our .properties escaper is proven against Java's own parser: arbitrary keys and values go through
`format_properties` and come back unchanged from java.util.Properties.load (one JVM for all examples,
tests/kafka/java/PropertiesEcho.java)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_rt.kafka.java_properties import format_properties
from streams_rt.kafka.jvm import REPO_ROOT, compile_java, find_java

pytestmark = pytest.mark.jvm

# What the properties format treats specially (escapes, separators, comments, blanks, line ends,
# continuation), what Java reads as more than one char (beyond U+FFFF), lone surrogates, plus any text.
_SPECIAL = " \\\t\n\r\f=:#!\x00\x7f\x80\xff\u0085\u2028\ufeffü日本𝄞"
_CHARS = st.one_of(st.sampled_from(_SPECIAL), st.characters(), st.characters(categories=["Cs"]))
_TEXT = st.text(_CHARS, max_size=30)


class JavaProperties:
    """A running PropertiesEcho: `load(text)` is what Java's Properties.load reads from `text`."""

    def __init__(self) -> None:
        classpath = compile_java([Path(__file__).with_name("java") / "PropertiesEcho.java"],
                                 REPO_ROOT / "build" / "properties-echo")
        self._process = subprocess.Popen([find_java(), "-cp", classpath, "PropertiesEcho"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, encoding="ascii")

    def load(self, text: str) -> dict[str, str]:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(text.encode("latin-1").hex() + "\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline()
        assert answer, f"PropertiesEcho exited with {self._process.poll()}"
        assert not answer.startswith("error"), answer
        loaded = {}
        for pair in answer.split():
            key, value = pair.split("=")
            loaded[_from_units(key)] = _from_units(value)
        return loaded

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=30)


def _from_units(hex_units: str) -> str:
    return bytes.fromhex(hex_units).decode("utf-16-be", "surrogatepass")


@pytest.fixture(scope="module")
def java_properties() -> Iterator[JavaProperties]:
    java = JavaProperties()
    yield java
    java.close()


@settings(max_examples=1000, deadline=None)
@given(entries=st.dictionaries(_TEXT, _TEXT, max_size=6))
def test_java_reads_back_exactly_what_was_escaped(java_properties: JavaProperties, entries: dict[str, str]) -> None:
    text = format_properties(entries)
    assert text.isascii(), "Kafka and log4j2 read the file as ISO-8859-1: only ASCII is read the same by both"
    assert java_properties.load(text) == entries


def test_a_hostile_path_survives(java_properties: JavaProperties) -> None:
    path = "/tmp/-a b\\c#d!e=f:g ü 日本 ${x}\t\n/ trailing "
    assert java_properties.load(format_properties({"log.dirs": path, " ": " "})) == {"log.dirs": path, " ": " "}


def test_the_echo_is_not_an_identity(java_properties: JavaProperties) -> None:
    """The harness itself: unescaped text is mangled the way the broker mangled paths before."""
    assert java_properties.load("log.dirs=/tmp/a\\b ü\n".encode().decode("latin-1")) == {"log.dirs": "/tmp/ab Ã¼"}
