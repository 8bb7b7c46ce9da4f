"""Our assignor as it was at an earlier commit, loaded from git beside today's, so a benchmark can run
both on the same inputs (bench/assignor_quality.py records an earlier assignor's figures this way).

The package `streams_rt/assignment` at that commit is written to a directory of its own under another
name (its imports of itself made relative); the rest of streams_rt (protocol, config) is today's."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "streams_rt/assignment"


def resolve_commit(commit: str) -> str:
    """The full commit id of `commit` (a name git understands); raises ValueError when git does not."""
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{commit}^{{commit}}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(f"not a commit of this repository: {commit} ({done.stderr.strip()})")
    return done.stdout.strip()


def describe(commit: str) -> str:
    """'<short id> (<commit date>)' for labels."""
    done = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h (%cs)", resolve_commit(commit)],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def assignor_at(commit: str, into: Path) -> ModuleType:
    """The assignment package at `commit`, imported from a copy under `into` (which the caller keeps
    until it is done with the module)."""
    full = resolve_commit(commit)
    name = f"assignment_at_{full[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    listed = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", full, f"{PACKAGE}/"],
                            capture_output=True, text=True, check=True).stdout.split()
    target = into / name
    target.mkdir(parents=True, exist_ok=True)
    for path in listed:
        if not path.endswith(".py"):
            continue
        text = subprocess.run(["git", "-C", str(REPO), "show", f"{full}:{path}"],
                              capture_output=True, text=True, check=True).stdout
        text = text.replace("from streams_rt.assignment.", "from .")
        (target / Path(path).name).write_text(text)
    if str(into) not in sys.path:
        sys.path.insert(0, str(into))
    return importlib.import_module(name)
