# The handful of targets a newcomer needs. `make test` and `make demo` each work on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint bench golden clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first and pinned: pip then takes the CPU wheel and never a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[repro,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/artbot demo

# What CI runs (.ci/run): lint, then every tier of the suite (fast, repro, network, e2e) on all
# cores, one test file per worker (--dist loadfile keeps a file's session fixtures in one
# process), handed out in the order tests/conftest.py sorts them, slowest tiers first
# (--no-loadscope-reorder: xdist would otherwise order files by their number of tests).
# Property tests use the derandomized hypothesis profile "ci" unless HYPOTHESIS_PROFILE
# says otherwise (CI's nightly run: "nightly").
PYTEST_PARALLEL := -n auto --dist loadfile --no-loadscope-reorder
test: lint
	$(BIN)/pytest $(PYTEST_PARALLEL)

# The edit loop: the fast tier only (no torch repros, no wheels, no artbot processes).
check: $(STAMP)
	$(BIN)/pytest $(PYTEST_PARALLEL) -m "not repro and not network and not e2e"

lint: $(STAMP)
	$(BIN)/ruff check artbot repros tests
	$(BIN)/ruff format --check artbot repros tests
	$(BIN)/mypy

# Regenerate tests/golden/ after an intended change to templates or findings; review the diff.
golden: $(STAMP)
	$(BIN)/python -m tests.golden_update

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache

bench: $(STAMP)
	$(BIN)/python -m tests.benchmarks
