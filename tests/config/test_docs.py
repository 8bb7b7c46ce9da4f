"""docs/configuration.md is generated from the registry; a stale page fails here with the command
that regenerates it."""

from __future__ import annotations

import subprocess
import sys

from streams_rt.config import KEYS, PREFIXES, Group
from streams_rt.config.markdown import REGENERATE, render
from streams_rt.kafka.jvm import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "configuration.md"


def test_the_committed_page_is_what_the_registry_generates() -> None:
    assert PAGE.read_text() == render(), f"docs/configuration.md is stale: run `{REGENERATE}` (or `make docs`)"


def test_the_module_entry_point_prints_the_page() -> None:
    printed = subprocess.run([sys.executable, "-m", "streams_rt.config", "--markdown"], cwd=REPO_ROOT,
                             capture_output=True, text=True, check=True).stdout
    assert printed == render()


def test_the_entry_point_refuses_to_run_without_saying_what_to_print() -> None:
    result = subprocess.run([sys.executable, "-m", "streams_rt.config"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and "--markdown" in result.stderr


def test_every_key_and_prefix_is_on_the_page_in_its_section() -> None:
    page = render()
    lines = page.splitlines()
    sections = {line.removeprefix("## "): index for index, line in enumerate(lines) if line.startswith("## ")}
    for key in KEYS:
        row = next(i for i, line in enumerate(lines) if line.startswith(f"| `{key.name}` |"))
        section = max((index, title) for title, index in sections.items() if index < row)[1]
        assert section == key.group.value, (key.name, section)
        assert key.meaning in lines[row]
    for prefix in PREFIXES:
        assert any(line.startswith(f"| `{prefix.prefix}` |") for line in lines), prefix.prefix
    assert {key.group for key in KEYS} <= set(Group)


def test_keys_of_our_own_are_marked() -> None:
    ours = [line for line in render().splitlines() if "**streams_rt**" in line and line.startswith("| `")]
    assert any(line.startswith("| `coordinator.host` |") for line in ours)
    assert not any(line.startswith("| `num.standby.replicas` |") for line in ours)
