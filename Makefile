# Two commands do all the set-up: `make demo` and `make test`. Every step is idempotent.
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed
KAFKA_LIBS := jvm/target/kafka-libs
JARS_STAMP := $(KAFKA_LIBS)/.resolved
PYTEST_ARGS ?=

.PHONY: demo test test-faults test-upgrade-runbook lint venv jars docs clean bench-peers

venv: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml
	test -x $(VENV_PY) || $(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install -q --upgrade pip
	$(VENV_PY) -m pip install -q -e '.[test]'
	touch $@

# Apache Kafka's broker and kafka-streams jars, pinned in jvm/pom.xml, resolved from Maven Central.
jars: $(JARS_STAMP)

$(JARS_STAMP): jvm/pom.xml
	@command -v java >/dev/null || { echo "Java 17+ is needed: apt-get install -y openjdk-17-jdk-headless"; exit 1; }
	@command -v mvn >/dev/null || { echo "Maven is needed: apt-get install -y maven"; exit 1; }
	rm -rf $(KAFKA_LIBS)
	mvn -q -B -f jvm/pom.xml dependency:copy-dependencies -DoutputDirectory=target/kafka-libs -DincludeScope=runtime
	touch $@

# The guardrails, before any test: lint and import order (ruff), then static types (mypy); both are
# configured in pyproject.toml. The first that fails stops `make test` with one line saying which.
lint: venv
	@$(VENV)/bin/ruff check . || { echo "make: ruff found the problems above ('.venv/bin/ruff check --fix .' fixes some)"; exit 1; }
	@$(VENV)/bin/mypy || { echo "make: mypy found the type errors above"; exit 1; }

# The fault suite's long forms (marker `faults`) run in `make test-faults` only; its short forms
# (`faults_short`) run in both. Each prints the suite's summary at the end.
test: venv lint jars
	$(VENV_PY) -m pytest -m "not faults" $(PYTEST_ARGS)

# The runbook test alone (tests/upgrade/test_runbook.py, local-cluster[3,1,1024], about 4 minutes
# with the cluster's start; `make test` runs it too).
test-upgrade-runbook: venv lint jars
	$(VENV_PY) -m pytest -m upgrade_runbook $(PYTEST_ARGS) tests/upgrade

test-faults: venv lint jars
	$(VENV_PY) -m pytest -m "faults or faults_short" $(PYTEST_ARGS) tests/faults

demo: venv jars
	$(VENV_PY) examples/word_count.py

# streams_rt side by side with Kafka Streams, Spark (SQL and Python stateful API) and Quix Streams
# (bench/peers/run.py); BENCH_ARGS="--records 200000" for a small run. Quix Streams gets a venv of its
# own (it pins an older confluent-kafka); the Java parts are built from Maven Central under build/.
BENCH_ARGS ?=
BENCH_STAMP := $(VENV)/.bench-installed
QUIX_VENV := build/peers-quix
PYSPARK_VERSION = $$($(VENV_PY) -c 'import pyspark; print(pyspark.__version__)')
SPARK_KAFKA_POM := bench/peers/spark-kafka/pom.xml

$(BENCH_STAMP): pyproject.toml $(VENV_STAMP)
	$(VENV_PY) -m pip install -q -e '.[test,bench]'
	touch $@

$(QUIX_VENV)/.installed:
	test -x $(QUIX_VENV)/bin/python || $(PYTHON) -m venv $(QUIX_VENV)
	$(QUIX_VENV)/bin/pip install -q 'quixstreams==3.28.1'
	touch $@

build/peers-kstreams/peers-kstreams-1.jar: bench/peers/kstreams/pom.xml $(wildcard bench/peers/kstreams/src/main/java/peers/*.java)
	mvn -q -B -f bench/peers/kstreams/pom.xml package

build/peers-spark-kafka/.resolved: $(SPARK_KAFKA_POM) $(BENCH_STAMP)
	rm -rf build/peers-spark-kafka/libs
	mvn -q -B -f $(SPARK_KAFKA_POM) dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/build/peers-spark-kafka/libs -Dspark.version=$(PYSPARK_VERSION) >/dev/null 2>&1 \
	  || { echo "make: no spark-sql-kafka $(PYSPARK_VERSION) on Maven Central; using the pom's version"; \
	       mvn -q -B -f $(SPARK_KAFKA_POM) dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/build/peers-spark-kafka/libs; }
	touch $@

bench-peers: $(BENCH_STAMP) jars $(QUIX_VENV)/.installed build/peers-kstreams/peers-kstreams-1.jar build/peers-spark-kafka/.resolved
	$(VENV_PY) bench/peers/run.py $(BENCH_ARGS)

# docs/configuration.md is generated from streams_rt/config/registry.py; tests/config/test_docs.py fails when stale.
docs: venv
	$(VENV_PY) -m streams_rt.config --markdown > docs/configuration.md.tmp
	mv docs/configuration.md.tmp docs/configuration.md

# A detached broker (`streams-rt dev-broker start`) would keep running on a deleted directory: stop it
# first (a missing venv or broker is fine; stop says "was not running"). If stop fails (an unreadable
# broker.json, say), nothing is deleted: its one-line error says what to do.
clean:
	if test -x $(VENV)/bin/streams-rt; then $(VENV)/bin/streams-rt dev-broker stop --dir .streams-rt/dev-broker; fi
	rm -rf $(VENV) jvm/target build .streams-rt .mypy_cache .ruff_cache
