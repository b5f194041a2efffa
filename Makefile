# The two commands that matter: `make demo` and `make test`. Both set everything up themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCHMARKS := benchmarks/overhead.py benchmarks/memory.py benchmarks/simulated_year.py benchmarks/latency.py benchmarks/routing_instructions.py benchmarks/checkpoint.py benchmarks/log_stream.py benchmarks/exactly_once.py benchmarks/cluster.py benchmarks/overload.py

.PHONY: setup java browser test lint demo bench docs clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

java:
	@sh scripts/check_java.sh

# the web console is tested in Debian's Chromium (no browser download); the test says so if absent
browser:
	@sh scripts/ensure_chromium.sh

lint: $(STAMP)
	$(PY) -m ruff check reactive_spark tests benchmarks examples scripts conftest.py
	$(PY) -m ruff format --check reactive_spark tests benchmarks examples scripts conftest.py
	$(PY) -m mypy

# three pytest workers on the 2 cores CI has, each with its own local[2] SparkContext: the tests
# wait on child processes, JVM starts and sockets much of the time, and a third worker fills
# those waits (the suite took 14 min where two took 17, same machine); a file's tests stay on
# one worker, in order (`pytest` alone runs the same tests serially)
test: $(STAMP) java browser lint
	$(PY) -m pytest -n 3 --dist loadfile

demo: $(STAMP) java
	$(VENV)/bin/reactive-spark demo

bench: $(STAMP) java
	@for b in $(BENCHMARKS); do echo "== $$b"; $(PY) $$b || exit 1; done

docs: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache reactive-spark-demo
