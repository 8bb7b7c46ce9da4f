"""The dev broker keeps everything inside the directory it is given, whatever characters its path has:
real brokers are started in hostile directories through the CLI, and every file they and the storage
tool write is found under that directory and nowhere else (the parent, the working directory, HOME);
what Kafka or Java cannot take is refused with one line before anything is written."""

from __future__ import annotations

import os
from collections.abc import Set
from pathlib import Path

import pytest

from streams_rt.kafka.broker_files import UnusableDirectoryError
from streams_rt.kafka.dev_broker import DevBroker
from streams_rt.kafka.jvm import KAFKA_LIBS, find_java
from tests.kafka.helpers import alive, assert_one_error_line, cli, create_topic, round_trip

pytestmark = pytest.mark.broker

# What the properties format (backslash, #, !, =, :, blanks, tab, line end), log4j2 (${...}, $$
# escapes), URIs (%41, +, #) and shells and option parsers (leading -, quotes, &, ;) treat specially,
# and non-ASCII text.
HOSTILE_NAME = "-lead  sp\\ace#hash!bang=eq:colon ü 日本 ${env:HOME} $${x} %41+~'\"&;\ttab\nline"


def _sandbox_env(sandbox: Path, **extra: str) -> dict[str, str]:
    """The CLI's environment: HOME inside the sandbox, no STREAMS_RT_HOME, and LC_ALL=C (an ASCII
    locale: the JVMs must still name non-ASCII paths right)."""
    env = {key: value for key, value in os.environ.items() if key != "STREAMS_RT_HOME"}
    return {**env, "HOME": str(sandbox / "home"), "LC_ALL": "C", **extra}


def _tree(root: Path) -> set[Path]:
    return {Path(dirpath) / name for dirpath, dirnames, filenames in os.walk(root) for name in dirnames + filenames}


def _assert_only_inside(sandbox: Path, directory: Path, made_by_the_test: Set[Path] = frozenset()) -> None:
    """Everything in the sandbox is the broker directory, its contents, an ancestor, or a directory the
    test made (all of those otherwise empty: anything in them would be listed too)."""
    outside = {path for path in _tree(sandbox) - made_by_the_test
               if path != directory and directory not in path.parents and path not in directory.parents}
    assert not outside, f"written outside {directory}: {sorted(map(str, outside))}"


def _files_the_broker_writes_or_maps(pid: int) -> set[str]:
    """The files the broker holds open for writing, and every file it has mapped (native libraries,
    perf data), minus the JDK, the Kafka jars and the system's libraries and locale data."""
    paths = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            flags = int(Path(f"/proc/{pid}/fdinfo/{fd}").read_text().split("flags:")[1].split()[0], 8)
        except OSError:  # closed meanwhile
            continue
        if flags & os.O_ACCMODE != os.O_RDONLY:
            paths.add(target)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6:
            paths.add(fields[5].replace("\\012", "\n"))  # the kernel writes a newline in a path as \012
    jdk = Path(os.path.realpath(find_java())).parents[1]
    known = (str(jdk), str(KAFKA_LIBS.resolve()), "/usr/", "/lib", "/etc/", "/dev/null")
    return {path.removesuffix(" (deleted)") for path in paths
            if path.startswith("/") and not path.startswith(known)}


def test_a_hostile_directory_keeps_every_file_inside(tmp_path: Path) -> None:
    directory = tmp_path / "parent" / HOSTILE_NAME
    env = _sandbox_env(tmp_path)
    for empty in ("cwd", "home"):
        (tmp_path / empty).mkdir()
    started = cli("start", "--dir", directory, cwd=tmp_path / "cwd", env=env)
    assert started.returncode == 0, started.stderr
    info = DevBroker(directory).status()
    assert info is not None and info.answering and info.directory == str(directory)
    try:
        # A relative --dir that starts with '-' is still the directory, not an option.
        status = cli("status", "--dir", HOSTILE_NAME, cwd=tmp_path / "parent", env=env)
        assert status.returncode == 0 and f"(pid {info.pid}," in status.stdout, status
        for codec in ("zstd", "lz4", "snappy"):  # the broker unpacks each codec's native library
            create_topic(info.bootstrap_servers, codec)
            assert len(round_trip(info.bootstrap_servers, codec, 100, compression=codec)) == 100
        outside = {path for path in _files_the_broker_writes_or_maps(info.pid) if not path.startswith(f"{directory}/")}
        assert not outside, f"the broker writes or maps files outside {directory}: {sorted(outside)}"
    finally:
        stopped = cli("stop", "--dir", directory, cwd=tmp_path / "cwd", env=env)
    assert stopped.returncode == 0 and stopped.stdout == "Kafka broker stopped\n", stopped
    assert not alive(info.pid)
    _assert_only_inside(tmp_path, directory, {tmp_path / "cwd", tmp_path / "home"})
    for expected in ("server.properties", "log4j2.properties", "data/meta.properties", "data/zstd-0",
                     "logs/server.log", "logs/console.log", "ports.json"):
        assert (directory / expected).exists(), expected
    assert not (directory / "broker.json").exists(), "stop removes the record"
    assert "Kafka Server started" in (directory / "logs" / "server.log").read_text()


def test_the_default_directory_under_a_hostile_working_directory(tmp_path: Path) -> None:
    """No --dir: `.streams-rt/dev-broker` under the working directory, which has a backslash and
    non-ASCII characters."""
    cwd = tmp_path / "wörk\\dir 日本 #1"
    cwd.mkdir()
    (tmp_path / "home").mkdir()
    env = _sandbox_env(tmp_path)
    started = cli("start", cwd=cwd, env=env)
    assert started.returncode == 0, started.stderr
    directory = cwd / ".streams-rt" / "dev-broker"
    info = DevBroker(directory).status()
    try:
        assert info is not None and info.answering and f"(pid {info.pid}," in started.stdout
    finally:
        stopped = cli("stop", cwd=cwd, env=env)
    assert stopped.returncode == 0 and stopped.stdout == "Kafka broker stopped\n", stopped
    _assert_only_inside(tmp_path, directory, {tmp_path / "home"})
    assert (directory / "data" / "meta.properties").exists() and (directory / "logs" / "server.log").stat().st_size


def test_a_comma_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    refusal = "log.dirs is a comma-separated list, so the broker directory's path must not contain a comma"
    assert_one_error_line(cli("start", "--dir", tmp_path / "a,b" / "broker", cwd=tmp_path), refusal, "a,b")
    (tmp_path / "c,d").mkdir()
    assert_one_error_line(cli("start", cwd=tmp_path / "c,d", env=_sandbox_env(tmp_path)), refusal,
                          str(tmp_path / "c,d" / ".streams-rt" / "dev-broker"))
    with pytest.raises(UnusableDirectoryError, match="must not contain a comma"):
        DevBroker(tmp_path / "e,f").start()
    assert _tree(tmp_path) == {tmp_path / "c,d"}


def test_a_path_java_cannot_name_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 have no Java String that names them."""
    latin1 = os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9")
    with pytest.raises(UnusableDirectoryError, match=r"caf\\xe9.*not valid UTF-8"):
        DevBroker(latin1).start()
    assert_one_error_line(cli("start", "--dir", latin1), "not valid UTF-8")
    assert _tree(tmp_path) == set()
