"""Whether Spark's Python workers can import streams_rt, said in one line before a query fails on it.

pyspark starts its Python workers with PYSPARK_PYTHON as it was when the SparkContext started, and
without it with whatever `python3` is on PATH: an application run from a virtualenv that was not
activated (`/path/venv/bin/python my_app.py`) has workers without streams_rt, and the query would fail
deep inside Spark with a worker's ModuleNotFoundError. On a cluster the executors need the package
too (README: a packed virtualenv in `spark.archives`)."""

from __future__ import annotations

import shutil
import subprocess
import sys

_FIX = ("set PYSPARK_PYTHON (or spark.pyspark.python with spark-submit) to an interpreter that has streams-rt "
        "before the SparkSession starts")


class WorkerPythonError(RuntimeError):
    """Spark's Python workers cannot import streams_rt; the message says which interpreter and what to set."""


def check_local_workers(python_exec: str) -> None:
    """In local mode the workers run `python_exec` on this machine: raise WorkerPythonError unless it
    imports streams_rt (asked once, in a subprocess, unless it is this very interpreter)."""
    found = shutil.which(python_exec)
    if found is not None and found == sys.executable:
        return
    if found is None:
        raise WorkerPythonError(f"Spark's Python workers would run {python_exec!r}, which is not found; {_FIX} "
                                f"(this interpreter: {sys.executable})")
    probe = subprocess.run([found, "-c", "import streams_rt"], capture_output=True, timeout=120)
    if probe.returncode != 0:
        raise WorkerPythonError(f"Spark's Python workers run {found} (PYSPARK_PYTHON, else python3 on PATH), which "
                                f"cannot import streams_rt; {_FIX} (this interpreter: {sys.executable})")


def executors_lack_streams_rt(error: BaseException) -> WorkerPythonError | None:
    """The clear error for a Spark job that failed because an executor's Python has no streams_rt
    (None when it failed otherwise)."""
    if "No module named 'streams_rt'" not in str(error):
        return None
    return WorkerPythonError("the executors' Python workers cannot import streams_rt: ship it with the application, "
                             "e.g. a virtualenv packed with venv-pack in spark.archives and PYSPARK_PYTHON="
                             "./environment/bin/python (README, Running on a cluster)")
