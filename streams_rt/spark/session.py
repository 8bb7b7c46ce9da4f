"""Building a SparkSession from `spark-conf/spark-defaults.conf`, with Python workers that run the
same interpreter as the driver and logs kept quiet."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from streams_rt.kafka.jvm import REPO_ROOT

SPARK_CONF_DIR = REPO_ROOT / "spark-conf"
DEFAULT_CONF = SPARK_CONF_DIR / "spark-defaults.conf"
LOG4J2_CONF = SPARK_CONF_DIR / "log4j2.properties"


def read_spark_defaults(path: Path = DEFAULT_CONF) -> dict[str, str]:
    """Parse Spark's properties-file format: `key value` or `key=value` lines, `#` comments."""
    settings: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = re.split(r"\s*=\s*|\s+", line, maxsplit=1)
        if len(parts) != 2 or not parts[1]:
            raise ValueError(f"{path}:{number}: expected 'key value', got {line!r}")
        settings[parts[0]] = parts[1]
    return settings


def build_session(master: str, app_name: str, conf_file: Path = DEFAULT_CONF,
                  extra: dict[str, str] | None = None) -> SparkSession:
    """A SparkSession for `master` (local[2], local-cluster[2,1,1024], ...).

    PYSPARK_PYTHON is pinned to this interpreter: Spark's Python workers otherwise start whatever
    `python3` is on PATH, which may lack pyarrow."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    quiet_logs = f"-Dlog4j2.configurationFile=file:{LOG4J2_CONF}"
    settings = {
        "spark.driver.extraJavaOptions": quiet_logs,
        "spark.executor.extraJavaOptions": quiet_logs,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        **read_spark_defaults(conf_file),
        **(extra or {}),
    }
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
