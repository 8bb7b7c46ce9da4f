"""`make test`'s first step, tools/prerequisites.sh: with everything there it says nothing; with one
thing missing or too old it names that one thing in one line, with the package that brings it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streams_rt.kafka.jvm import REPO_ROOT

SCRIPT = REPO_ROOT / "tools" / "prerequisites.sh"
TOOLS = ("java", "javac", "mvn", "sed", "head")


def machine(tmp_path: Path, leave_out: str = "", fakes: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose PATH holds only the tools the script asks for (the real ones, less
    `leave_out`, plus `fakes`: name -> shell script body) and a stand-in Chromium."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found is not None, f"this machine lacks {tool}"
        if tool != leave_out:
            (bin_dir / tool).symlink_to(found)
    scripts = {**({"chromium": "exit 0"} if leave_out != "chromium" else {}), **(fakes or {})}
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    return {**env, "PATH": str(bin_dir)}


def check(env: dict[str, str], purpose: str = "test", python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/bash", str(SCRIPT), python, purpose], capture_output=True, text=True, env=env,
                          timeout=60)


def one_line(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert result.returncode == 1 and result.stdout == "", result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("make: "), result.stderr
    for text in expected:
        assert text in lines[0], (text, lines[0])


def test_nothing_missing_says_nothing(tmp_path: Path) -> None:
    result = check(machine(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize(("missing", "named"), [
    ("chromium", "Chromium is needed for the status page tests: apt-get install -y chromium"),
    ("mvn", "Maven is needed"),
    ("java", "a JDK 17 or newer is needed (no java)"),
    ("javac", "javac is needed"),
])
def test_the_missing_tool_is_named_in_one_line(tmp_path: Path, missing: str, named: str) -> None:
    one_line(check(machine(tmp_path, leave_out=missing)), named)


def test_demo_needs_no_chromium_or_javac(tmp_path: Path) -> None:
    env = machine(tmp_path, leave_out="chromium")
    (tmp_path / "bin" / "javac").unlink()
    assert check(env, "demo").returncode == 0


def test_an_old_jdk_is_named_with_its_version(tmp_path: Path) -> None:
    old = 'echo \'openjdk version "11.0.22" 2024-01-16\' >&2'
    one_line(check(machine(tmp_path, leave_out="java", fakes={"java": old})), "JDK 17 or newer", "version 11")


def test_an_old_python_is_named_with_its_version(tmp_path: Path) -> None:
    fake = tmp_path / "python3.9"
    fake.write_text("#!/bin/sh\ncase \"$1\" in -V) echo 'Python 3.9.18';; *) exit 1;; esac\n")
    fake.chmod(0o755)
    one_line(check(machine(tmp_path), python=str(fake)), "Python 3.11 or newer is needed", "Python 3.9.18")
