#!/usr/bin/env bash
# What the machine needs before `make` installs the rest (the virtualenv, the Kafka jars): the first
# thing missing is named in one line, with the Debian package that brings it, and the exit code is 1.
#
#   tools/prerequisites.sh PYTHON demo|jars|test
#
# demo: Python 3.11+ with venv, a JDK 17+ (java; the broker and Spark run on it) and Maven.
# jars: a JDK 17+ and Maven.    test: as demo, plus javac (tests compile Java against Kafka's
# classes) and Chromium (the status page tests drive it headless; `make test-fast` needs none).
set -u
python=$1
purpose=$2

missing() {
    echo "make: $1" >&2
    exit 1
}

if [ "$purpose" != jars ]; then
    command -v "$python" >/dev/null 2>&1 \
        || missing "Python 3.11 or newer is needed ($python not found): apt-get install -y python3 python3-venv, or PYTHON=/path/to/python3"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
        || missing "Python 3.11 or newer is needed ($python is $("$python" -V 2>&1)): PYTHON=/path/to/python3.11+"
    "$python" -c 'import ensurepip, venv' 2>/dev/null \
        || missing "Python's venv module is needed ($python has none): apt-get install -y python3-venv"
fi

java=java
[ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java=$JAVA_HOME/bin/java
command -v "$java" >/dev/null 2>&1 || missing "a JDK 17 or newer is needed (no java): apt-get install -y openjdk-17-jdk-headless"
major=$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p' | head -n 1)
[ "${major:-0}" -ge 17 ] 2>/dev/null \
    || missing "a JDK 17 or newer is needed ($java is version ${major:-unknown}): apt-get install -y openjdk-17-jdk-headless, or JAVA_HOME"
command -v mvn >/dev/null 2>&1 || missing "Maven is needed (it resolves the Kafka jars): apt-get install -y maven"

if [ "$purpose" = test ]; then
    javac=javac
    [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ] && javac=$JAVA_HOME/bin/javac
    command -v "$javac" >/dev/null 2>&1 \
        || missing "javac is needed (a JDK, not only a JRE): apt-get install -y openjdk-17-jdk-headless"
    command -v chromium >/dev/null 2>&1 \
        || missing "Chromium is needed for the status page tests: apt-get install -y chromium (make test-fast runs the pure tests without it)"
fi
exit 0
