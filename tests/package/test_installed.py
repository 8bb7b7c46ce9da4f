"""streams-rt as a user outside this repository gets it: the wheel and sdist built with `python -m
build`, the wheel installed into a fresh virtualenv, and an application in a folder of its own
(tests/package/app, copied elsewhere) counting words through StreamsRuntime against a dev broker
that the installed `streams-rt` command started, on `local[2]`; then on `local-cluster[2,1,1024]`
and on a standalone cluster started with Spark's own daemon script (Master, Worker), where the
executors get the package from the virtualenv packed with venv-pack (`spark.archives`) and the
topology's module through `spark.submit.pyFiles`. Marked `package`: `make test-package` runs them
(several minutes: two builds, an install, three Spark applications)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streams_rt.kafka.jvm import KAFKA_LIBS, REPO_ROOT
from tests.kafka.helpers import free_port

pytestmark = pytest.mark.package

APP = Path(__file__).with_name("app")
# What a user's shell would not have: nothing may lead the installed package back to this checkout.
CHECKOUT_VARIABLES = ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_CONF_DIR", "SPARK_HOME", "PYSPARK_PYTHON",
                      "PYSPARK_DRIVER_PYTHON", "STREAMS_RT_KAFKA_LIBS")


def user_environment(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in CHECKOUT_VARIABLES}, **extra}


def run(command: list[str | Path], timeout: float = 900, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert result.returncode == 0, \
        f"{command} exited {result.returncode}:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built as `python -m build` builds them (the wheel from the sdist)."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, REPO_ROOT])
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv outside the checkout with the wheel installed."""
    path = tmp_path_factory.mktemp("user") / "venv"
    run([sys.executable, "-m", "venv", path])
    run([path / "bin" / "python", "-m", "pip", "install", "-q", next(dist.glob("*.whl"))], env=user_environment())
    return path


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The application's own folder, outside the checkout."""
    folder = tmp_path_factory.mktemp("word-app")
    for source in APP.glob("*.py"):
        shutil.copy(source, folder)
    return folder


@pytest.fixture(scope="module")
def broker(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A dev broker started by the installed `streams-rt` command (Kafka's jars named by
    STREAMS_RT_KAFKA_LIBS, as a user without a checkout would point it at a Kafka download's libs/)."""
    directory = tmp_path_factory.mktemp("broker")
    cli: list[str | Path] = [venv / "bin" / "streams-rt", "dev-broker"]
    env = user_environment(STREAMS_RT_KAFKA_LIBS=str(KAFKA_LIBS))
    run([*cli, "start", "--dir", directory], env=env, timeout=180)
    try:
        status = run([*cli, "status", "--dir", directory], env=env).stdout
        yield status.split(" at ", 1)[1].split()[0]
    finally:
        run([*cli, "stop", "--dir", directory], env=env, timeout=120)


def run_app(venv: Path, app: Path, bootstrap: str, master: str, conf: dict[str, str], workers_python: str,
            ) -> dict[str, Any]:
    """The application's JSON line, after checking it counted every word exactly. `workers_python` is
    PYSPARK_PYTHON, as the README says to set it."""
    result = run([venv / "bin" / "python", "word_app.py", bootstrap, master, json.dumps(conf)], cwd=app,
                 env=user_environment(PYSPARK_PYTHON=workers_python, SPARK_LOCAL_IP="127.0.0.1"), timeout=900)
    outcome: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["counts"] == outcome["expected"]
    assert Path(outcome["streams_rt"]).is_relative_to(venv), outcome["streams_rt"]
    return outcome


def test_the_sdist_and_the_wheel_carry_the_package_and_only_the_package(dist: Path) -> None:
    wheel = zipfile.ZipFile(next(dist.glob("streams_rt-*.whl")))
    names = wheel.namelist()
    assert "streams_rt/__init__.py" in names and "streams_rt/coordinator/status_page.html" in names
    assert not [n for n in names if n.startswith(("tests/", "examples/", "bench/"))]
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Requires-Python: >=3.11" in metadata and "Requires-Dist: pyspark>=4.2" in metadata
    entry_points = wheel.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "streams-rt = streams_rt.cli:main" in entry_points
    with tarfile.open(next(dist.glob("streams_rt-*.tar.gz"))) as sdist:
        files = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "streams_rt/coordinator/status_page.html",
            "streams_rt/cli/__init__.py"} <= files


def test_an_application_in_its_own_folder_runs_on_local_spark(venv: Path, app: Path, broker: str) -> None:
    outcome = run_app(venv, app, broker, "local[2]", {}, str(venv / "bin" / "python"))
    assert len(outcome["query_endpoints"]) == 1  # local.task.hosts=1
    assert outcome["host_pythons"] == [str(venv / "bin" / "python")]


def test_workers_without_streams_rt_are_one_clear_error(venv: Path, app: Path, broker: str, tmp_path: Path) -> None:
    """The virtualenv's python run by path, not activated: pyspark's workers would run `python3` from
    PATH, here an interpreter without the package. StreamsRuntime says so before anything starts."""
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(sys.base_prefix + "/bin/python3")  # the base Python: no streams-rt
    env = user_environment(PATH=f"{bare}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run([str(venv / "bin" / "python"), "word_app.py", broker, "local[2]", "{}"], cwd=app, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode != 0
    assert f"WorkerPythonError: Spark's Python workers run {bare / 'python3'}" in result.stderr, result.stderr[-3000:]
    assert "cannot import streams_rt; set PYSPARK_PYTHON" in result.stderr


def packed(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = tmp_path_factory.mktemp("packed") / "environment.tar.gz"
    run([Path(sys.executable).with_name("venv-pack"), "--prefix", venv, "--output", archive, "--quiet"])
    return archive


def cluster_conf(venv: Path, app: Path, archive: Path) -> dict[str, str]:
    """What a cluster application in client mode sets: the packed virtualenv for the executors' Python
    (Spark unpacks it as ./environment in each executor's working directory; PYSPARK_PYTHON is
    ./environment/bin/python), the topology's module. The driver's own Python workers (Spark plans a
    Python data source on the driver) run the same relative path from the driver's working
    directory, where `environment` links to the driver's virtualenv."""
    link = app / "environment"
    if not link.exists():
        link.symlink_to(venv)
    return {"spark.archives": f"{archive}#environment",
            "spark.submit.pyFiles": str(app / "word_topology.py"), "spark.executor.instances": "2",
            "spark.executor.memory": "1g", "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false"}


def test_on_local_cluster_with_a_packed_virtualenv(venv: Path, app: Path, broker: str,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    conf = cluster_conf(venv, app, packed(venv, tmp_path_factory))
    outcome = run_app(venv, app, broker, "local-cluster[2,1,1024]", conf, "./environment/bin/python")
    assert len(set(outcome["query_endpoints"])) == 2  # a task host on each executor
    assert_hosts_ran_the_packed_environment(outcome, 2)


def assert_hosts_ran_the_packed_environment(outcome: dict[str, Any], executors: int) -> None:
    """Each executor's host ran the interpreter of the archive Spark unpacked in its working directory."""
    pythons = outcome["host_pythons"]
    assert len(pythons) == executors and all(p.endswith("/environment/bin/python") for p in pythons), pythons
    assert len({Path(p).parents[2] for p in pythons}) == executors, pythons  # one working directory each


def test_on_a_standalone_cluster_started_with_sparks_scripts(venv: Path, app: Path, broker: str,
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """The master and a worker as sbin/start-master.sh and sbin/start-worker.sh start them (the
    pyspark package ships sbin/spark-daemon.sh, which those wrap, not the wrappers)."""
    spark_home = next((venv / "lib").glob("python3.*/site-packages/pyspark"))
    work = tmp_path_factory.mktemp("standalone")
    env = user_environment(SPARK_HOME=str(spark_home), SPARK_PID_DIR=str(work / "pids"),
                           SPARK_LOG_DIR=str(work / "logs"), SPARK_WORKER_DIR=str(work / "worker"),
                           SPARK_LOCAL_IP="127.0.0.1", SPARK_IDENT_STRING="test")
    daemon = spark_home / "sbin" / "spark-daemon.sh"
    port = free_port()
    master = ["org.apache.spark.deploy.master.Master", "1", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(free_port())]
    worker = ["org.apache.spark.deploy.worker.Worker", "1", "--host", "127.0.0.1", "--webui-port", str(free_port()),
              "--cores", "2", "--memory", "3g", f"spark://127.0.0.1:{port}"]
    run([daemon, "start", *master], env=env, timeout=120)
    try:
        run([daemon, "start", *worker], env=env, timeout=120)
        conf = {**cluster_conf(venv, app, packed(venv, tmp_path_factory)), "spark.executor.cores": "1",
                "spark.cores.max": "2"}
        outcome = run_app(venv, app, broker, f"spark://127.0.0.1:{port}", conf, "./environment/bin/python")
        assert len(set(outcome["query_endpoints"])) == 2
        assert_hosts_ran_the_packed_environment(outcome, 2)
        assert all(Path(p).is_relative_to(work / "worker") for p in outcome["host_pythons"])
    finally:
        for command in (worker, master):
            subprocess.run([str(daemon), "stop", command[0], "1"], env=env, capture_output=True, timeout=120)
        deadline = time.monotonic() + 60
        while any((work / "pids").glob("*.pid")) and time.monotonic() < deadline:
            time.sleep(0.5)
