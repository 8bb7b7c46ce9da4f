"""StreamsRuntime refuses, in one line, a local Spark whose Python workers cannot import streams_rt
(PYSPARK_PYTHON unset and `python3` on PATH another interpreter), naming the interpreter and the fix;
an executor's ModuleNotFoundError for streams_rt becomes the same kind of line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from streams_rt.spark.worker_python import WorkerPythonError, check_local_workers, executors_lack_streams_rt


def test_this_interpreter_passes_without_a_probe() -> None:
    check_local_workers(sys.executable)


def test_an_interpreter_without_streams_rt_is_named_with_the_fix(tmp_path: Path) -> None:
    bare = tmp_path / "python3"
    bare.write_text("#!/bin/sh\nexit 1\n")  # `import streams_rt` fails, as in a Python without the package
    bare.chmod(0o755)
    with pytest.raises(WorkerPythonError) as raised:
        check_local_workers(str(bare))
    assert f"Spark's Python workers run {bare}" in str(raised.value) and "set PYSPARK_PYTHON" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_missing_interpreter_is_named() -> None:
    with pytest.raises(WorkerPythonError, match="'no-such-python', which is not found"):
        check_local_workers("no-such-python")


def test_an_executors_missing_package_is_explained_and_other_failures_are_not() -> None:
    explained = executors_lack_streams_rt(RuntimeError("... ModuleNotFoundError: No module named 'streams_rt'\n..."))
    assert explained is not None and "spark.archives" in str(explained)
    assert executors_lack_streams_rt(RuntimeError("No module named 'word_topology'")) is None
