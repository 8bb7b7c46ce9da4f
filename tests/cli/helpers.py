"""Running `streams-rt` as a user does: a fresh Python process, its exit code, its output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.kafka.helpers import assert_one_error_line

__all__ = ["assert_one_error_line", "streams_rt"]


def streams_rt(*args: str | Path, input: str | None = None, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams_rt.cli", *map(str, args)], capture_output=True, text=True,
                          input=input, timeout=timeout, env={**os.environ, **(env or {})},
                          cwd=Path(__file__).resolve().parents[2])
