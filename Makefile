# nbgraph: set-up and everyday commands.
#
#   make test    create .venv, install nbgraph[test] (+ graphviz's dot), `make check`, every test
#   make check   ruff, mypy (strict on nbgraph/core) and the private-import check
#   make lab     same set-up plus JupyterLab, then open the tutorials
#   make bench   run the benchmark suite
#   make clean   remove the virtual environment and every generated file
#
# Works on a fresh Debian/Ubuntu machine.  As root, missing system packages
# (graphviz, a C compiler, python3-venv, and chromium for the real-browser
# tests of tests/browser) are installed with apt-get; otherwise
# the one sudo command to run is printed and set-up carries on without them.

SHELL  := /bin/bash
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
PIP    := $(VPY) -m pip install --quiet

# Stamps live inside .venv: deleting .venv forces a full reinstall, and editing
# pyproject.toml forces a pip install on the next run.  A second `make test`
# therefore skips straight to pytest.
STAMP       := $(VENV)/.setup-stamp-test
LAB_STAMP   := $(VENV)/.setup-stamp-lab
BENCH_STAMP := $(VENV)/.setup-stamp-bench

NOTEBOOKS    := $(wildcard notebooks/*.ipynb)
SANITIZE_CFG := $(wildcard notebooks/sanitize.cfg)
PYTEST_ARGS  ?=
LAB_ARGS     ?=

.PHONY: setup system-deps bytecode check test lab bench bench-dask clean

setup: system-deps $(STAMP)

# System packages.  Runs every time but costs only a few `command -v` calls
# once everything is present.
system-deps:
	@missing=""; \
	command -v dot >/dev/null 2>&1 || missing="$$missing graphviz"; \
	command -v chromium >/dev/null 2>&1 || [ -n "$${NBGRAPH_CHROMIUM:-}" ] || missing="$$missing chromium"; \
	if [ -z "$${CC:-}" ] && ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then \
	    missing="$$missing gcc libc6-dev"; \
	fi; \
	if [ ! -x "$(VPY)" ] && ! $(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1; then \
	    missing="$$missing python3-venv"; \
	fi; \
	if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	        echo "==> installing system packages:$$missing"; \
	        export DEBIAN_FRONTEND=noninteractive; \
	        apt-get update && apt-get install -y --no-install-recommends $$missing; \
	    else \
	        echo "==> missing system packages:$$missing"; \
	        echo "    install them with:  sudo apt-get install -y --no-install-recommends$$missing"; \
	        echo "    (continuing: tests that need them are skipped)"; \
	    fi; \
	fi

$(VPY): | system-deps
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(VPY)
	@echo "==> installing nbgraph[test] into $(VENV)"
	$(PIP) -e '.[test]'
	@$(MAKE) --no-print-directory bytecode
	@touch $@

# An editable install writes no .pyc files (a wheel install does), and this
# environment may set PYTHONDONTWRITEBYTECODE: without them every fresh
# process compiles nbgraph's sources again (~30 ms).  compileall only
# rewrites the files whose source changed.
bytecode: | $(VPY)
	@$(VPY) -m compileall -q nbgraph

$(LAB_STAMP): $(STAMP)
	@echo "==> installing nbgraph[test,lab] into $(VENV)"
	$(PIP) -e '.[test,lab]'
	@touch $@

# numexpr and PyTensor (the peer the issue's anchors were measured with) are
# optional: the benchmarks compare against them only when present.
$(BENCH_STAMP): $(STAMP)
	@$(PIP) -e '.[test,bench]' || echo "==> numexpr could not be installed; benchmarks run without it"
	@$(PIP) 'pytensor==3.0.7' || echo "==> PyTensor could not be installed; benchmarks run without it"
	@touch $@

# The scalar, elementwise and reduction tests run a second time with NumPy's runtime
# SIMD dispatch narrowed to its baseline (tests/numpy_dispatch.py names the AVX2 and
# AVX-512 groups, or aarch64's SVE/ASIMD ones, that the installed NumPy knows): an
# expectation that holds only at one SIMD level then fails here, not on another CPU.
SIMD_TESTS := tests/tensor/test_scalar.py tests/tensor/test_scalar_c.py \
              tests/tensor/test_elemwise.py tests/tensor/test_reduction.py

# Static checks, before any test runs: a lint finding fails CI as a test would.
check: setup
	$(VENV)/bin/ruff check nbgraph tests bench
	$(VENV)/bin/mypy
	$(VPY) tools/check_private_imports.py nbgraph

test: setup check
	$(VPY) -m pytest tests nbgraph README.md $(PYTEST_ARGS)
	@features="$$($(VPY) tests/numpy_dispatch.py)" || exit 1; \
	echo "==> again with NumPy's SIMD dispatch narrowed: NPY_DISABLE_CPU_FEATURES=\"$$features\""; \
	NPY_DISABLE_CPU_FEATURES="$$features" $(VPY) -m pytest -p no:cacheprovider $(SIMD_TESTS) $(PYTEST_ARGS)
ifneq ($(NOTEBOOKS),)
	$(VPY) -m pytest --nbval --nbval-current-env \
	    $(if $(SANITIZE_CFG),--nbval-sanitize-with $(SANITIZE_CFG)) notebooks/ $(PYTEST_ARGS)
else
	@echo "==> no notebooks/*.ipynb yet: skipping the notebook tests"
endif

# The stored tutorials are trusted (their pictures show on first open, before
# any cell runs); on a remote or headless machine pass e.g.
#   make lab LAB_ARGS="--no-browser --ip=0.0.0.0 --port=8888"
lab: setup $(LAB_STAMP)
	@mkdir -p notebooks
	@$(VENV)/bin/jupyter trust notebooks/*.ipynb
	@extra=""; [ "$$(id -u)" = 0 ] && extra="--allow-root"; \
	set -x; $(VENV)/bin/jupyter lab $$extra $(LAB_ARGS) notebooks/

bench: setup $(BENCH_STAMP) bytecode
	@if [ -d bench ]; then \
	    $(VPY) -m bench; \
	else \
	    echo "==> no bench/ directory: nothing to run"; \
	fi

# the Dask linker's rows (issue 18: gigabytes per row, 1 and 2 worker processes) and
# its out-of-core test (workers with 1 GB limits), both too long for bench/test
bench-dask: setup $(BENCH_STAMP) bytecode
	$(VPY) -m bench.dask_cases $(DASK_BENCH_ARGS)
	NBGRAPH_SLOW_TESTS=1 $(VPY) -m pytest -q tests/linkers/dask/test_out_of_core.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis .mypy_cache .ruff_cache
	rm -rf *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	find . -name .ipynb_checkpoints -type d -prune -exec rm -rf {} +
