"""Building a SparkSession configured by `spark-conf/` (spark-defaults.conf and log4j2.properties), with
Python workers that run the same interpreter as the driver, and a Spark JVM that Ctrl-C does not reach."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import IO

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from streams_rt.kafka.jvm import REPO_ROOT

SPARK_CONF_DIR = REPO_ROOT / "spark-conf"  # in a checkout; an installed package uses Spark's own defaults
# Spark's launcher always adds `--add-modules=jdk.incubator.vector`, and the JDK then prints this on
# every start; it says nothing a user can act on.
_JVM_NOISE = (b"WARNING: Using incubator modules:",)


def build_session(master: str, app_name: str, extra: dict[str, str] | None = None) -> SparkSession:
    """A SparkSession for `master` (local[2], local-cluster[2,1,1024], ...).

    Spark reads `spark-defaults.conf` and `log4j2.properties` from SPARK_CONF_DIR when it launches the
    JVM, so this has to be set before the first session of the process; an operator's own
    SPARK_CONF_DIR wins, and an installed package (no checkout's `spark-conf/`) leaves it to Spark.
    `extra` wins over the file. PYSPARK_PYTHON is pinned to this interpreter:
    Spark's Python workers (executors inherit it) otherwise start whatever `python3` is on PATH,
    which may lack pyarrow."""
    if SPARK_CONF_DIR.is_dir():
        os.environ.setdefault("SPARK_CONF_DIR", str(SPARK_CONF_DIR))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list((extra or {}).items()))
    _launch_jvm_apart(conf)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _launch_jvm_apart(conf: SparkConf) -> None:
    """Launch Spark's JVM for this process (once; later sessions reuse it, as pyspark does) in a
    session of its own. Ctrl-C in a terminal signals the whole foreground process group: pyspark
    keeps SIGINT from its JVM, but the Python workers that JVM forks restore Python's handler, so a
    Ctrl-C meant for the driver failed whatever task a worker was running, and the query with it.
    Apart, the driver alone gets the SIGINT and stops the query itself. The JVM still ends with the
    driver (it exits when its stdin, a pipe from this process, closes)."""
    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return
        gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True, "stderr": subprocess.PIPE})
        threading.Thread(target=_forward_stderr, args=(gateway.proc.stderr,), name="spark-jvm-stderr",
                         daemon=True).start()
        SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def _forward_stderr(stream: IO[bytes]) -> None:
    """Copy the JVM's stderr (Spark's console log, its Python workers' tracebacks) to ours, line by
    line, less the start-up notice in _JVM_NOISE."""
    for line in iter(stream.readline, b""):
        if not line.startswith(_JVM_NOISE):
            os.write(2, line)
