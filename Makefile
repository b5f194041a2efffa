# The two commands that matter: `make demo` and `make test`. Both set everything up themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCHMARKS := benchmarks/overhead.py benchmarks/memory.py benchmarks/simulated_year.py benchmarks/latency.py benchmarks/checkpoint.py benchmarks/log_stream.py

.PHONY: setup java test lint demo bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

java:
	@sh scripts/check_java.sh

lint: $(STAMP)
	$(PY) -m ruff check reactive_spark tests benchmarks examples
	$(PY) -m ruff format --check reactive_spark tests benchmarks examples
	$(PY) -m mypy

test: $(STAMP) java lint
	$(PY) -m pytest

demo: $(STAMP) java
	$(PY) examples/daily_weekly_logs.py

bench: $(STAMP) java
	@for b in $(BENCHMARKS); do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
