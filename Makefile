# agentsweep: everything a fresh machine with only python3 needs.
#   make run   set up .venv from requirements.lock, run the default sweep, print the summary
#   make test  set up .venv with test extras from requirements-dev.lock, run the tests
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
export UV_PYTHON := $(BIN)/python
ARGS ?=

.PHONY: setup setup-dev run test lint bench clean

setup: $(VENV)/.installed-runtime
setup-dev: $(VENV)/.installed-dev

$(BIN)/uv: requirements-bootstrap.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes -r requirements-bootstrap.txt
	touch $@

$(VENV)/.installed-runtime: requirements.lock pyproject.toml $(BIN)/uv
	$(UV) pip install --quiet --require-hashes -r requirements.lock
	$(UV) pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed-dev: requirements-dev.lock pyproject.toml $(BIN)/uv
	$(UV) pip install --quiet --require-hashes -r requirements-dev.lock
	$(UV) pip install --quiet --no-deps -e .
	touch $@ $(VENV)/.installed-runtime

run: setup
	$(BIN)/agentsweep run $(ARGS)

test: setup-dev
	$(BIN)/python -m pytest -q $(ARGS)

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: setup-dev
	$(BIN)/python benchmarks/throughput.py $(ARGS)

clean:
	rm -rf $(VENV) .agentsweep .pytest_cache
