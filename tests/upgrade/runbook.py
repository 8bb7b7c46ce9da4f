"""The runbook's command blocks as data: docs/operations/rolling-upgrade.md marks each executable
block with an info string, e.g.

    ```bash step=first-bounce each=host expect="group stable at generation"

`step` names it (the test knows every step by name, so a block added, removed or renamed in the text
fails the test), `each=host` repeats it for every host, `expect` (repeatable) is text the block's
output must contain, and `manual` marks a block the test does not run."""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "operations" / "rolling-upgrade.md"
_BLOCK = re.compile(r"^```bash (?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Step:
    name: str
    commands: tuple[tuple[str, ...], ...]  # each a `streams-rt ...` argv, placeholders unexpanded
    each_host: bool
    expect: tuple[str, ...]
    manual: bool

    def argv(self, values: Mapping[str, str]) -> list[list[str]]:
        """The commands with $APP, $HOST, ... replaced; a placeholder without a value is an error."""
        return [[string.Template(word).substitute(values) for word in command] for command in self.commands]


def steps(text: str | None = None) -> list[Step]:
    """Every marked block of the runbook, in order."""
    found = []
    for block in _BLOCK.finditer(RUNBOOK.read_text() if text is None else text):
        info = shlex.split(block["info"])
        options = dict(word.partition("=")[::2] for word in info)
        expect = tuple(word.partition("=")[2] for word in info if word.startswith("expect="))
        commands = tuple(tuple(shlex.split(line)) for line in block["body"].splitlines() if line.strip())
        if not all(command[0] == "streams-rt" for command in commands):
            raise ValueError(f"step {options.get('step')}: every line is a streams-rt command: {commands}")
        found.append(Step(options["step"], commands, options.get("each") == "host", expect, "manual" in options))
    return found
