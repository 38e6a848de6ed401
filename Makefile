# Every target sets itself up: a fresh clone needs only python3 (>= 3.11) and a JRE 17;
# what else a target needs from Debian (mvn, openssl, chromium) it installs when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: `make run` installs what the service needs and nothing else; the tools of
# the other targets (pytest, ruff, mypy, schemathesis, ...) come with `.[dev]`.
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp
REST_PORT ?= 8083
DATA_DIR ?= .sparkherd
BROKER ?= tansu

SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup chromium jvm-tools postgresql run test limits docs docs-serve lint typecheck unit integration bench clean

$(RUNTIME_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME_STAMP)

$(DEV_STAMP): $(RUNTIME_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

setup: $(DEV_STAMP)

# The browser test (tests/integration/test_ui.py) renders /ui in Debian's chromium.
chromium:
	command -v chromium >/dev/null || { $(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

# Apache Kafka's and Kafka Connect's jars come from Maven Central through mvn on first use
# (cached in ~/.cache/sparkherd); the secured-Kafka test makes its certificates with openssl;
# the differential tests compile their Connect oracle with javac.
jvm-tools:
	command -v mvn >/dev/null && command -v openssl >/dev/null && command -v javac >/dev/null || \
		{ $(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q maven openssl openjdk-17-jdk-headless; }

# The Iceberg jdbc catalog's tests start a throw-away PostgreSQL 15 (tests/support/postgres.py).
postgresql:
	test -x /usr/lib/postgresql/15/bin/initdb || { $(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; }

run: $(RUNTIME_STAMP) $(if $(filter kafka,$(BROKER)),jvm-tools)
	$(BIN)/sparkherd up --broker $(BROKER) --rest-port $(REST_PORT) --data-dir $(DATA_DIR)

# The manual (mkdocs.yml, docs/) into site/. Strict: a broken link, a missing anchor or a
# page left out of the navigation fails the build, and `make test` builds it first.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

# The class archive of the tests' Spark drivers (tests/support/spark_class_archive.py):
# they start in half the CPU. Dumped again when the venv or the JDK changes.
SPARK_CLASSES := build/spark-classes.jsa
JAVA := $(realpath $(shell command -v java))

$(SPARK_CLASSES): $(DEV_STAMP) $(JAVA) | jvm-tools
	$(BIN)/python -m tests.support.spark_class_archive $@

# The limits the suite holds the protocol and the assignor to (under a minute together).
limits: setup
	$(BIN)/python -m tests.bench.protocol_sizes
	$(BIN)/python -m tests.bench.assignor_bench --quick

# First the docs, lint, types and limits beside the class archive's dump, two at a time
# (the dump, half a minute, is mostly Spark's; each check is one Python). Then two pytest
# runs: the modules marked `parallel` (and every unit and simulation test), two at a time,
# keeping both cores busy; then the rest, whose timing and short sessions want no such
# neighbour, two at a time beside each other only. Modules marked `long` are dealt out
# first (tests/conftest.py), in place of xdist's
# order by number of tests, so that neither process is left with a long module at the
# end. Each run writes JUnit XML to $(REPORTS), each runs even when one before it failed,
# and the 25 slowest tests of all are printed either way; the target fails if any run did.
REPORTS := .test-reports
TWO_AT_A_TIME := -n 2 --dist loadfile --no-loadscope-reorder
test: setup chromium jvm-tools postgresql
	$(MAKE) --no-print-directory -j2 docs lint typecheck limits $(SPARK_CLASSES)
	rm -rf $(REPORTS) && mkdir -p $(REPORTS)
	status=0; \
	$(BIN)/python -m pytest -q $(TWO_AT_A_TIME) -m 'parallel or not integration' \
		--junitxml=$(REPORTS)/parallel.xml || status=1; \
	$(BIN)/python -m pytest -q $(TWO_AT_A_TIME) -m 'integration and not parallel' \
		--junitxml=$(REPORTS)/timed.xml || status=1; \
	$(BIN)/python -m tests.support.slowest 25 $(REPORTS)/parallel.xml $(REPORTS)/timed.xml; \
	exit $$status

unit: setup
	$(BIN)/python -m pytest -q tests/unit

integration: setup chromium jvm-tools postgresql $(SPARK_CLASSES)
	$(BIN)/python -m pytest -q tests/integration

# versus_jdbc_sink.py starts a PostgreSQL beside Kafka; the versus benches' jars come through mvn.
# Each script runs as a module of the tests package, which is how it imports tests.support.
bench: setup jvm-tools postgresql
	for script in $$(grep -l '^if __name__ == "__main__":' tests/bench/*.py); do \
		$(BIN)/python -m tests.bench.$$(basename $$script .py) || exit 1; done

clean:
	rm -rf $(VENV) $(DATA_DIR) site .pytest_cache .mypy_cache .ruff_cache $(REPORTS) $(SPARK_CLASSES)
