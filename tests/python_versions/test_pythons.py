"""The oldest and the newest supported Python (pyproject.toml's classifiers): for each, a virtualenv of
its own (build/pythons/<version>) with this checkout and its test extras installed (editable),
then the pure tests and one application end to end on the real broker and Spark (the word count
example, whose hosts and Spark workers run that interpreter). Marked `python_versions`: `make
test-pythons` runs them (minutes: two installs). The interpreters come from pyenv or PATH
(`python3.X`); a missing one fails the test, naming how to install it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from streams_rt.kafka.dev_broker import BrokerInfo
from streams_rt.kafka.jvm import REPO_ROOT

pytestmark = pytest.mark.python_versions

PYPROJECT = (REPO_ROOT / "pyproject.toml").read_text()
SUPPORTED = sorted(set(re.findall(r'"Programming Language :: Python :: (3\.\d+)"', PYPROJECT)),
                   key=lambda v: tuple(map(int, v.split("."))))
PURE = re.search(r"^PURE := (.*?)(?<!\\)$", (REPO_ROOT / "Makefile").read_text(), re.MULTILINE | re.DOTALL)


def interpreter(version: str) -> Path:
    """`python<version>`: pyenv's newest build of it, else one on PATH."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    builds = sorted(root.glob(f"{version}.*/bin/python{version}"),
                    key=lambda p: tuple(map(int, p.parents[1].name.split(".")[:3])))
    found = builds[-1] if builds else shutil.which(f"python{version}")
    if found is None:
        pytest.fail(f"Python {version} is not installed: `pyenv install {version}` or `uv python install {version}`")
    return Path(found)


def test_the_classifiers_name_the_supported_range() -> None:
    assert SUPPORTED[0] == "3.11" and re.search(r'requires-python = ">=3\.11"', PYPROJECT)
    assert len(SUPPORTED) >= 2


@pytest.mark.timeout(2400)  # an install, the pure tests and an application: past the suite's 600 s on a busy machine
@pytest.mark.parametrize("version", [SUPPORTED[0], SUPPORTED[-1]], ids=["oldest", "newest"])
def test_pure_tests_and_an_application_run_on(version: str, kafka_broker: BrokerInfo) -> None:
    python = interpreter(version)
    venv = REPO_ROOT / "build" / "pythons" / version
    if not (venv / "bin" / "python").exists():
        subprocess.run([str(python), "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON")}
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-e", f"{REPO_ROOT}[test]"],
                             capture_output=True, text=True, timeout=1800, env=env)
    assert install.returncode == 0, install.stderr[-4000:]
    ran = subprocess.run([str(venv / "bin" / "python"), "-c", "import sys; print(sys.version_info[:2])"],
                         capture_output=True, text=True, env=env)
    assert ran.stdout.strip() == str(tuple(map(int, version.split(".")))), ran

    assert PURE is not None
    marker = " ".join(PURE[1].replace("\\\n", " ").split())
    pure = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "-m", marker, str(REPO_ROOT / "tests")],
                          capture_output=True, text=True, timeout=1800, env=env, cwd=REPO_ROOT)
    assert pure.returncode == 0, pure.stdout[-6000:]
    assert re.search(r"\d+ passed", pure.stdout.splitlines()[-1]), pure.stdout[-2000:]

    example = subprocess.run([str(venv / "bin" / "python"), str(REPO_ROOT / "examples" / "word_count.py"),
                              "--bootstrap", kafka_broker.bootstrap_servers, "--seconds", "15",
                              "--records-per-second", "300"],
                             capture_output=True, text=True, timeout=900, env=env, stdin=subprocess.DEVNULL)
    assert example.returncode == 0, example.stderr[-4000:]
    assert "top words" in example.stdout, example.stdout[-2000:]
