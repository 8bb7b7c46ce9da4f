"""The registry cannot silently miss a key: the source of every configuration reader is read with
`ast`, and each key it reads (a registry constant such as `STATE_DIR`, or a key string where a
reader still takes raw properties) must be registered, with that reader in the key's `read_by` (and
no key may claim a reader that does not read it). A reader that moves or is renamed fails here
until this table follows it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streams_rt.config import KEYS, ConfigKey, registry
from streams_rt.config.registry import BY_DEPRECATED_NAME, BY_NAME

PACKAGE = Path(__file__).resolve().parents[2] / "streams_rt"
KEY_LIKE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+")
REGISTRY_MODULE = "streams_rt.config.registry"


@dataclass(frozen=True)
class Reader:
    """Code that reads configuration: `scope` is the path of class and function names to its body."""

    name: str
    path: str
    scope: tuple[str, ...]


READERS = (
    Reader(registry.STATE_CONFIG, "state/config.py", ("StateConfig", "from_config")),
    Reader(registry.ASSIGNMENT_CONFIGS, "assignment/model.py", ("AssignmentConfigs", "from_config")),
    Reader(registry.COORDINATOR_CONFIG, "coordinator/service.py", ("CoordinatorConfig", "from_config")),
    Reader(registry.START_COORDINATOR, "coordinator/service.py", ("start_coordinator",)),
    Reader(registry.CONTROL_PLANE, "rpc/settings.py", ("ControlPlaneSettings", "from_config")),
    Reader(registry.MEMBER_CONFIG, "tasks/membership.py", ("MemberConfig", "from_config")),
    Reader(registry.QUERY_SETTINGS, "iq/settings.py", ("QuerySettings", "from_config")),
    Reader(registry.HOST_PROCESSING, "tasks/host.py", ("HostSettings", "processing")),
    Reader(registry.SPARK_SOURCE_OPTIONS, "spark/source.py", ("SourceOptions", "parse")),
    Reader(registry.RESTART_REQUEST, "tasks/restart.py", ("RestartRequest", "host_config")),
)


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


def registry_names(module: ast.Module) -> tuple[dict[str, str], set[str]]:
    """How `module` refers to the registry: {local name: registry attribute} for what it imports
    from it, and the local names of the registry module itself."""
    names: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module == REGISTRY_MODULE:
            names.update({alias.asname or alias.name: alias.name for alias in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module == "streams_rt.config":
            modules.update(alias.asname or alias.name for alias in node.names if alias.name == "registry")
    return names, modules


def key_constants(node: ast.AST, module: ast.Module) -> set[str]:
    """The names of the registered keys `node` reads through the registry's constants."""
    names, modules = registry_names(module)
    attributes = {names[n.id] for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in names}
    attributes |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                   and isinstance(n.value, ast.Name) and n.value.id in modules}
    found = (getattr(registry, attribute, None) for attribute in attributes)
    return {value.name for value in found if isinstance(value, ConfigKey)}


def keys_read(reader: Reader) -> set[str]:
    module = parse(reader.path)
    body = find_scope(module, reader.scope)
    return key_strings(body) | key_constants(body, module)


def parse(path: str) -> ast.Module:
    return ast.parse((PACKAGE / path).read_text(), path)


def claimed_by(reader: str) -> set[str]:
    return {key.name for key in KEYS if reader in key.read_by}


@pytest.mark.parametrize("reader", READERS, ids=lambda reader: reader.name)
def test_every_key_a_reader_reads_is_registered_for_that_reader(reader: Reader) -> None:
    read = keys_read(reader)
    assert read, f"{reader.name} reads no key: is the scope right?"
    unregistered = sorted(read - set(BY_NAME) - set(BY_DEPRECATED_NAME))
    assert not unregistered, f"{reader.name} reads keys the registry lacks: {unregistered}"
    assert read == claimed_by(reader.name), (
        f"{reader.name}: read but not listed in read_by: {sorted(read - claimed_by(reader.name))}; "
        f"listed but not read: {sorted(claimed_by(reader.name) - read)}"
    )


def test_every_read_by_names_a_known_reader() -> None:
    known = {reader.name for reader in READERS}
    for key in KEYS:
        for reader in key.read_by:
            assert reader in known, (key.name, reader)


def test_the_scanner_sees_keys_read_through_registry_constants() -> None:
    source = ("from streams_rt.config.registry import STATE_DIR as DIR, REPLICATION_FACTOR, AT_LEAST_ONCE\n"
              "from streams_rt.config import registry as r\n"
              "def reader(config):\n"
              "    return config.get(DIR), config.get(r.COMMIT_INTERVAL_MS), AT_LEAST_ONCE, 'a.b'\n")
    module = ast.parse(source)
    body = find_scope(module, ("reader",))
    assert key_constants(body, module) == {"state.dir", "commit.interval.ms"}
    assert key_strings(body) == {"a.b"}


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
