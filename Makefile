# Two commands do all the set-up: `make demo` and `make test`. Every step is idempotent.
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed
KAFKA_LIBS := jvm/target/kafka-libs
JARS_STAMP := $(KAFKA_LIBS)/.resolved
KAFKA_LIBS_PREVIOUS := jvm/target/kafka-libs-previous
PYTEST_ARGS ?=
# Tests that start no broker, no Spark and no JVM (`make test-fast`); markers are in pyproject.toml, and
# tests/conftest.py marks every test that uses the broker or Spark fixtures.
PURE := not broker and not spark and not jvm and not local_cluster and not faults and not faults_short \
        and not upgrade_runbook and not package and not python_versions
# Marked runs of their own, outside `make test`: the package in fresh virtualenvs and on Spark clusters,
# the other Python versions, the hour-long soak.
OWN_RUNS := not package and not python_versions and not soak

.PHONY: demo test test-fast test-faults test-soak test-upgrade-runbook test-package test-kafka-previous test-pythons \
        lint venv jars jars-previous prerequisites prerequisites-demo docs clean bench-peers

# What the machine must have before anything is installed; the first that is missing is named in one
# line with the command that installs it.
prerequisites:
	@tools/prerequisites.sh $(PYTHON) test

prerequisites-demo:
	@tools/prerequisites.sh $(PYTHON) demo

# Set-up steps keep their tools' output in a log, shown only when the step fails (pip's and setuptools'
# banners, Maven's colour codes).
quietly = { $(1); } > $(2) 2>&1 || { tail -n 40 $(2); echo "make: that failed; the whole output is in $(2)"; exit 1; }

venv: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml
	@test -x $(VENV_PY) || $(PYTHON) -m venv $(VENV)
	@echo "make: installing the Python dependencies into $(VENV)"
	@$(call quietly,$(VENV_PY) -m pip install --upgrade pip && $(VENV_PY) -m pip install -e '.[test]',$(VENV)/pip.log)
	@touch $@

# Apache Kafka's broker and kafka-streams jars, pinned in jvm/pom.xml, resolved from Maven Central.
jars: $(JARS_STAMP)

$(JARS_STAMP): jvm/pom.xml
	@tools/prerequisites.sh $(PYTHON) jars
	@echo "make: resolving the Apache Kafka jars (jvm/pom.xml) into $(KAFKA_LIBS)"
	@rm -rf $(KAFKA_LIBS) && mkdir -p $(KAFKA_LIBS)
	@$(call quietly,mvn -B -f jvm/pom.xml dependency:copy-dependencies -DoutputDirectory=target/kafka-libs -DincludeScope=runtime,jvm/target/maven.log)
	@touch $@

# The previous Kafka release's jars (kafka.previous.version), for `make test-kafka-previous`.
jars-previous: $(KAFKA_LIBS_PREVIOUS)/.resolved

$(KAFKA_LIBS_PREVIOUS)/.resolved: jvm/pom.xml
	@tools/prerequisites.sh $(PYTHON) jars
	@rm -rf $(KAFKA_LIBS_PREVIOUS) && mkdir -p $(KAFKA_LIBS_PREVIOUS)
	@$(call quietly,mvn -B -f jvm/pom.xml -P kafka-previous dependency:copy-dependencies -DoutputDirectory=target/kafka-libs-previous -DincludeScope=runtime,jvm/target/maven-previous.log)
	@touch $@

# The guardrails, before any test: lint and import order (ruff), then static types (mypy); both are
# configured in pyproject.toml. The first that fails stops `make test` with one line saying which.
lint: venv
	@$(VENV)/bin/ruff check . || { echo "make: ruff found the problems above ('.venv/bin/ruff check --fix .' fixes some)"; exit 1; }
	@$(VENV)/bin/mypy || { echo "make: mypy found the type errors above"; exit 1; }

# The fault suite's long forms (marker `faults`) run in `make test-faults` only; its short forms
# (`faults_short`) run in both. Each prints the suite's summary at the end, and the 25 slowest
# steps, so the suite's time (kept well under 30 minutes) is watched where it goes.
test: prerequisites venv lint jars
	$(VENV_PY) -m pytest -m "not faults and $(OWN_RUNS)" --durations=25 $(PYTEST_ARGS)

# The pure tests alone: no broker, Spark, JVM or browser (two workers; about a minute on 2 cores).
test-fast: venv
	$(VENV_PY) -m pytest -n 2 -m "$(PURE)" $(PYTEST_ARGS)

# streams-rt as a user gets it: wheel and sdist built, the wheel installed into fresh virtualenvs outside
# the checkout, an application run from another folder on local[2], on local-cluster with a packed
# virtualenv in spark.archives, and on a standalone cluster started with Spark's own scripts.
test-package: prerequisites venv lint jars
	$(VENV_PY) -m pytest -m package $(PYTEST_ARGS)

# The broker-facing and Java-facing tests against the previous Kafka release (jvm/pom.xml's
# kafka.previous.version): its broker, its kafka-streams classes for the codecs and the defaults.
test-kafka-previous: prerequisites venv lint jars-previous
	STREAMS_RT_KAFKA_LIBS=$(CURDIR)/$(KAFKA_LIBS_PREVIOUS) $(VENV_PY) -m pytest \
	  -m "(jvm or broker) and not local_cluster and not faults and not upgrade_runbook and $(OWN_RUNS)" $(PYTEST_ARGS)

# The oldest and the newest supported Python (pyproject.toml's classifiers) in virtualenvs of their own.
test-pythons: prerequisites venv lint jars
	$(VENV_PY) -m pytest -m python_versions $(PYTEST_ARGS)

# The runbook test alone (tests/upgrade/test_runbook.py, local-cluster[3,1,1024], about 4 minutes
# with the cluster's start; `make test` runs it too).
test-upgrade-runbook: prerequisites venv lint jars
	$(VENV_PY) -m pytest -m upgrade_runbook $(PYTEST_ARGS) tests/upgrade

test-faults: prerequisites venv lint jars
	$(VENV_PY) -m pytest -m "(faults or faults_short) and not soak" $(PYTEST_ARGS) tests/faults

# The randomized soak's hour-long form (tests/faults/test_soak.py, marker `soak`; its 4-minute form is
# in test-faults). It prints its seed: STREAMS_RT_SOAK_SEED=<seed> replays a run's faults.
test-soak: prerequisites venv lint jars
	$(VENV_PY) -m pytest -s -m soak $(PYTEST_ARGS) tests/faults

demo: prerequisites-demo venv jars
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
