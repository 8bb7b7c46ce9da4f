"""Building a SparkSession configured by `spark-conf/` (spark-defaults.conf and log4j2.properties), with
Python workers that run the same interpreter as the driver."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from streams_rt.kafka.jvm import REPO_ROOT

SPARK_CONF_DIR = REPO_ROOT / "spark-conf"


def build_session(master: str, app_name: str, extra: dict[str, str] | None = None) -> SparkSession:
    """A SparkSession for `master` (local[2], local-cluster[2,1,1024], ...).

    Spark reads `spark-defaults.conf` and `log4j2.properties` from SPARK_CONF_DIR when it launches the
    JVM, so this has to be set before the first session of the process; an operator's own
    SPARK_CONF_DIR wins. `extra` wins over the file. PYSPARK_PYTHON is pinned to this interpreter:
    Spark's Python workers (executors inherit it) otherwise start whatever `python3` is on PATH,
    which may lack pyarrow."""
    os.environ.setdefault("SPARK_CONF_DIR", str(SPARK_CONF_DIR))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
