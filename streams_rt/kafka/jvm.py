"""Finding Java and the pinned Kafka jars that `make jars` resolves, and compiling the small
Java programs that tests and benchmarks run against Kafka's own classes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKA_LIBS = Path(os.environ.get("STREAMS_RT_KAFKA_LIBS", REPO_ROOT / "jvm" / "target" / "kafka-libs"))


class JvmSetupError(RuntimeError):
    """Java or the Kafka jars are missing; the message names the command that fixes it."""


class JavaCompileError(subprocess.CalledProcessError):
    """javac rejected the sources; unlike CalledProcessError, the message includes javac's output."""

    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.stderr or ''}{self.output or ''}".rstrip()


def find_jdk_tool(name: str, explicit: str | None = None) -> str:
    """A JDK executable (`java`, `javac`): an explicit path, else $JAVA_HOME/bin/<name>, else <name> on
    PATH, so that the JDK JAVA_HOME names runs and compiles alike."""
    candidates = [explicit] if explicit else []
    if not explicit and os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / name))
    if not explicit:
        candidates.append(name)
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    raise JvmSetupError(
        f"{name} was not found (looked for {', '.join(candidates)}). "
        "Install a JDK 17 or newer: `apt-get install -y openjdk-17-jdk-headless`."
    )


def find_java(java: str | None = None) -> str:
    """The `java` executable (see find_jdk_tool)."""
    return find_jdk_tool("java", java)


def kafka_classpath(libs: Path = KAFKA_LIBS) -> str:
    """Classpath of every resolved Kafka jar; raises JvmSetupError naming `make jars` when absent."""
    jars = sorted(libs.glob("*.jar")) if libs.is_dir() else []
    if not any(j.name.startswith("kafka_2.13-") for j in jars):
        raise JvmSetupError(f"the Kafka jars are not in {libs}: in a checkout, `make jars` resolves them; "
                            "elsewhere set STREAMS_RT_KAFKA_LIBS to a directory of Apache Kafka's jars "
                            "(a Kafka download's libs/)")
    return os.pathsep.join(str(j) for j in jars)


def compile_java(sources: list[Path], out_dir: Path) -> str:
    """Compile `sources` against the Kafka jars into `out_dir` unless already up to date (newer than
    the sources, and compiled against the same jars: STREAMS_RT_KAFKA_LIBS may name another release).

    Returns the classpath to run them with (out_dir first)."""
    classpath = kafka_classpath()
    stamp = out_dir / ".compiled"
    newest = max(src.stat().st_mtime for src in sources)
    if not stamp.exists() or stamp.stat().st_mtime < newest or stamp.read_text() != classpath:
        javac = find_jdk_tool("javac")
        out_dir.mkdir(parents=True, exist_ok=True)
        command = [javac, "-nowarn", "-d", str(out_dir), "-cp", classpath, *map(str, sources)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise JavaCompileError(result.returncode, command, result.stdout, result.stderr)
        stamp.write_text(classpath)
    return os.pathsep.join([str(out_dir), classpath])
