"""The registry cannot silently miss a key: the source of every configuration reader is read with
`ast`, and each key string it reads must be registered, with that reader in the key's `read_by`
(and no key may claim a reader that does not read it). A reader that moves or is renamed fails here
until this table follows it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streams_rt.config import KEYS
from streams_rt.config.registry import BY_DEPRECATED_NAME, BY_NAME, MEMBER_CONFIG

PACKAGE = Path(__file__).resolve().parents[2] / "streams_rt"
KEY_LIKE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+")


@dataclass(frozen=True)
class Reader:
    """Code that reads configuration: `scope` is the path of class and function names to its body."""

    name: str
    path: str
    scope: tuple[str, ...]


READERS = (
    Reader("StateConfig.from_properties", "state/config.py", ("StateConfig", "from_properties")),
    # The class, not just from_properties: the key names live in its _KEYS table.
    Reader("AssignmentConfigs.from_properties", "assignment/model.py", ("AssignmentConfigs",)),
    Reader("CoordinatorConfig.from_properties", "coordinator/service.py", ("CoordinatorConfig", "from_properties")),
    Reader("start_coordinator", "coordinator/service.py", ("start_coordinator",)),
)

# MemberConfig has no properties reader: its fields are named after Kafka's keys
# (session_timeout_ms for session.timeout.ms). These fields are not properties.
MEMBER_CONFIG_PATH = "tasks/membership.py"
MEMBER_FIELDS_NOT_PROPERTIES = {
    "coordinator_address": "the driver coordinator's Flight address, handed to each host by the runtime",
    "protocol": "a test override of what upgrade.from implies",
    "subscription_version": "a test override of what upgrade.from implies",
}


def find_scope(tree: ast.AST, scope: tuple[str, ...]) -> ast.AST:
    node = tree
    for name in scope:
        found = [child for child in ast.iter_child_nodes(node)
                 if isinstance(child, (ast.ClassDef, ast.FunctionDef)) and child.name == name]
        assert found, f"{'.'.join(scope)} not found: the reader moved; update READERS in {__file__}"
        node = found[0]
    return node


def key_strings(node: ast.AST) -> set[str]:
    """Every string constant in `node` that looks like a configuration key (`a.b`, `a.b.c_d`)."""
    return {n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and KEY_LIKE.fullmatch(n.value)}


def parse(path: str) -> ast.Module:
    return ast.parse((PACKAGE / path).read_text(), path)


def claimed_by(reader: str) -> set[str]:
    return {key.name for key in KEYS if reader in key.read_by}


@pytest.mark.parametrize("reader", READERS, ids=lambda reader: reader.name)
def test_every_key_a_reader_reads_is_registered_for_that_reader(reader: Reader) -> None:
    read = key_strings(find_scope(parse(reader.path), reader.scope))
    assert read, f"{reader.name} reads no key: is the scope right?"
    unregistered = sorted(read - set(BY_NAME) - set(BY_DEPRECATED_NAME))
    assert not unregistered, f"{reader.name} reads keys the registry lacks: {unregistered}"
    assert read == claimed_by(reader.name), (
        f"{reader.name}: read but not listed in read_by: {sorted(read - claimed_by(reader.name))}; "
        f"listed but not read: {sorted(claimed_by(reader.name) - read)}"
    )


def member_config_fields() -> list[str]:
    body = find_scope(parse(MEMBER_CONFIG_PATH), ("MemberConfig",))
    assert isinstance(body, ast.ClassDef)
    return [stmt.target.id for stmt in body.body
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)]


def test_every_member_config_field_is_a_registered_key() -> None:
    fields = member_config_fields()
    assert set(MEMBER_FIELDS_NOT_PROPERTIES) <= set(fields), "a field listed as not a property is gone"
    for field in fields:
        if field in MEMBER_FIELDS_NOT_PROPERTIES:
            continue
        name = field.replace("_", ".")
        assert name in BY_NAME, f"MemberConfig.{field} stands for {name}, which the registry lacks"
        assert f"{MEMBER_CONFIG}.{field}" in BY_NAME[name].read_by, f"{name}.read_by lacks MemberConfig.{field}"
    claimed = {reader.removeprefix(f"{MEMBER_CONFIG}.") for key in KEYS for reader in key.read_by
               if reader.startswith(f"{MEMBER_CONFIG}.")}
    assert claimed <= set(fields), f"read_by names MemberConfig fields that do not exist: {claimed - set(fields)}"


def test_every_read_by_names_a_known_reader() -> None:
    known = {reader.name for reader in READERS}
    for key in KEYS:
        for reader in key.read_by:
            assert reader in known or reader.startswith(f"{MEMBER_CONFIG}."), (key.name, reader)


def property_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, key) of every `x["a.b"]`, `x.get("a.b", ...)` and `"a.b" in x`: the shapes a properties
    reader takes, wherever it is."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            candidates = [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            candidates = node.args[:1]
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            candidates = [node.left]
        else:
            continue
        for candidate in candidates:
            if isinstance(candidate, ast.Constant) and isinstance(candidate.value, str) \
                    and KEY_LIKE.fullmatch(candidate.value):
                yield node.lineno, candidate.value


def test_no_module_reads_an_unregistered_key() -> None:
    """Beyond the known readers: a new `props.get("some.key")` anywhere in the package fails here."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if PACKAGE / "config" in path.parents:
            continue
        for line, key in property_reads(ast.parse(path.read_text(), str(path))):
            if key not in BY_NAME and key not in BY_DEPRECATED_NAME:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {key}")
    assert not found, "keys read but not registered in streams_rt/config/registry.py:\n" + "\n".join(found)


def test_the_scanner_sees_each_shape_of_read() -> None:
    source = 'a = props["x.y"]\nb = props.get("p.q", 1)\nif "m.n" in props: pass\nprops["w.z"] = 1\n'
    assert sorted(key for _, key in property_reads(ast.parse(source))) == ["m.n", "p.q", "x.y"]
