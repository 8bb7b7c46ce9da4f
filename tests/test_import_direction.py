"""Package dependencies point the intended way: protocol <- assignment <- coordinator; protocol <- rpc <-
coordinator and tasks; state never imports tasks, coordinator or spark; the pure packages (protocol,
assignment, topology) import no I/O. Every import in every module is read from its syntax tree, including
imports inside functions, so a lazy import cannot hide a wrong dependency."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "streams_rt"

# Leaf modules at the top of the package, usable by every part. A leaf imports no subpackage unless
# LEAF_DEPENDENCIES says so (config reads the upgrade.from releases from protocol); those parts must
# not import that leaf back, or the two would form a cycle.
LEAVES = {"atomic_file", "sensor", "config", "processes", "log_levels", "import_path"}
LEAF_DEPENDENCIES: dict[str, set[str]] = {"config": {"protocol"}}

# What each part may import from streams_rt (besides itself and the leaves).
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "assignment": {"protocol"},
    "rpc": {"protocol"},
    "kafka": {"protocol"},
    "topology": {"protocol"},
    "state": {"protocol", "kafka"},
    "coordinator": {"protocol", "assignment", "rpc", "kafka"},
    "tasks": {"protocol", "rpc", "state", "topology", "kafka"},
    "iq": {"protocol", "rpc", "state", "tasks", "topology", "kafka"},
    "runtime": {"protocol", "rpc", "coordinator", "tasks", "state", "topology", "kafka"},
    "spark": {"protocol", "rpc", "coordinator", "tasks", "state", "topology", "kafka", "iq", "runtime"},
    "cli": {"protocol", "rpc", "coordinator", "tasks", "state", "topology", "kafka", "iq", "spark", "runtime"},
}
for leaf in LEAVES:
    ALLOWED.setdefault(leaf, set(LEAF_DEPENDENCIES.get(leaf, set())))

# Third-party and standard modules that do I/O or start threads: the pure parts must not touch them.
# Arrow's arrays, types and compute functions are pure data (the topology's column operations are
# written in them); its RPC, file systems and file formats are I/O.
IO_MODULES = {
    "confluent_kafka", "rocksdict", "pyspark", "socket", "subprocess", "threading",
    "http", "urllib", "requests", "fastapi", "uvicorn", "shutil", "tempfile", "os",
    "pyarrow.flight", "pyarrow.fs", "pyarrow.dataset", "pyarrow.parquet", "pyarrow.csv", "pyarrow.orc",
}
PURE = {"protocol", "assignment", "topology"}


def part_of(module: str) -> str | None:
    """`streams_rt.coordinator.group` -> `coordinator`; None for modules outside the package."""
    parts = module.split(".")
    if parts[0] != "streams_rt" or len(parts) < 2:
        return None
    return parts[1]


def imports_of(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """(line, absolute name) of everything the file imports, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from streams_rt import spark` names a part through its alias
                yield node.lineno, f"{target}.{alias.name}"


def violations(path: Path, module: str) -> list[str]:
    """Every import of `module` (at `path`) that goes against the table above."""
    own = part_of(module)
    if own is None:
        return []
    allowed = ALLOWED.get(own)
    if allowed is None:
        return [f"{module}: the part {own!r} is not in the dependency table; add it"]
    found = []
    for line, target in imports_of(path, module):
        theirs = part_of(target)
        usable_leaf = theirs in LEAVES and own not in LEAF_DEPENDENCIES.get(theirs, set())
        if theirs is not None and theirs != own and not usable_leaf and theirs not in allowed:
            found.append(f"{path}:{line}: {own} must not import {target}")
        does_io = any(target == io or target.startswith(io + ".") for io in IO_MODULES)
        if own in PURE and does_io:
            found.append(f"{path}:{line}: {own} is pure and must not import {target}")
    return found


def all_modules() -> Iterator[tuple[Path, str]]:
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        relative = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield path, ".".join(parts)


def test_every_import_follows_the_dependency_table() -> None:
    found = [v for path, module in all_modules() for v in violations(path, module)]
    assert not found, "imports against the intended direction:\n" + "\n".join(found)


def test_the_table_knows_every_part() -> None:
    parts = {part for _, module in all_modules() if (part := part_of(module)) is not None}
    assert parts <= set(ALLOWED), f"parts missing from the table: {sorted(parts - set(ALLOWED))}"


@pytest.mark.parametrize(
    "module, source, expected",
    [
        ("streams_rt.tasks.host", "from streams_rt.coordinator.group import Group\n", "tasks must not import"),
        ("streams_rt.coordinator.server", "import streams_rt.tasks.group_member\n", "coordinator must not import"),
        ("streams_rt.state.stores.kv", "def f():\n    from streams_rt.spark import x\n", "state must not import"),
        ("streams_rt.rpc.client", "from ..coordinator import errors\n", "rpc must not import"),
        ("streams_rt.topology.dsl", "import confluent_kafka\n", "topology is pure"),
        ("streams_rt.assignment.lag", "from rocksdict import Rdict\n", "assignment is pure"),
        ("streams_rt.protocol.upgrade", "from streams_rt.config import resolve\n", "protocol must not import"),
        ("streams_rt.config.registry", "from streams_rt.state import StateConfig\n", "config must not import"),
    ],
)
def test_the_checker_catches_a_wrong_import(tmp_path: Path, module: str, source: str, expected: str) -> None:
    path = tmp_path / "module.py"
    path.write_text(source)
    found = violations(path, module)
    assert len(found) == 1 and expected in found[0], found


def test_the_checker_resolves_relative_imports(tmp_path: Path) -> None:
    path = tmp_path / "__init__.py"
    path.write_text("from .client import GroupClient\nfrom .. import sensor\n")
    assert list(imports_of(path, "streams_rt.rpc")) == [
        (1, "streams_rt.rpc.client.GroupClient"), (2, "streams_rt.sensor"),
    ]
