# The handful of targets a newcomer needs. `make test` and `make demo` each work on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo sandbox test test-all check lint bench golden clean

# Each long step says what it starts, then how long it took: $(call step,what,command)
# (a comma inside either is written $(,)).
, := ,
step = @echo "==> $(1)"; start=$$(date +%s); $(2) && echo "    done in $$(( $$(date +%s) - start )) s: $(1)"

# Set-up says what each step does as it starts (pip itself is kept quiet; torch is the long one).
# PYTHONWARNINGS: setuptools notes at every editable install of a flat layout that a folder
# named like a package could shadow it; artbot has no such folder.
$(STAMP): pyproject.toml
	@echo "==> [1/4] creating $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV)
	@echo "==> [2/4] upgrading pip"
	@$(BIN)/pip install --quiet --upgrade pip
	@# torch first and pinned: pip then takes the CPU wheel and never a multi-GB CUDA build.
	$(call step,[3/4] installing torch==2.13.0$(,) CPU build (the long step: a large download),$(BIN)/pip install --quiet torch==2.13.0)
	$(call step,[4/4] installing artbot and its tools: pip install -e '.[repro$(,)dev]',PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet -e '.[repro$(,)dev]')
	@touch $(STAMP)
	@echo "==> $(VENV) is ready: run artbot as $(BIN)/artbot (or 'source $(BIN)/activate' first)"

demo: $(STAMP)
	$(BIN)/artbot demo

# The demo's sandbox in the foreground, seeded, printing the lines to paste into another shell.
sandbox: $(STAMP)
	$(BIN)/artbot sandbox --seed

# Two test targets. `make test`, the one to run before pushing: lint, the fast and end-to-end
# tiers, and of the slow tiers (repro, network) only their representative slice: one fake and
# one real fix per item, captured outputs on one kernel, the newest release
# (tests/helpers/tiers.py, pytest --slice). `make test-all`, what CI runs (.ci/run): every tier,
# every control, every release. Both run on all cores, one test file per worker (--dist
# loadfile keeps a file's session fixtures in one process), handed out in the order
# tests/conftest.py sorts them, slowest tiers first (--no-loadscope-reorder: xdist would
# otherwise order files by their number of tests). Property tests use the derandomized
# hypothesis profile "ci" unless HYPOTHESIS_PROFILE says otherwise (CI's nightly: "nightly").
PYTEST_PARALLEL := -n auto --dist loadfile --no-loadscope-reorder

test: lint
	$(call step,tests: fast and e2e tiers$(,) the slow tiers' slice (pytest prints a dot per test),$(BIN)/pytest $(PYTEST_PARALLEL) --slice)

test-all: lint
	$(call step,tests: every tier$(,) every control and release (pytest prints a dot per test),$(BIN)/pytest $(PYTEST_PARALLEL))

# The edit loop: the fast tier only (no torch repros, no wheels, no artbot processes).
check: $(STAMP)
	$(call step,tests: the fast tier,$(BIN)/pytest $(PYTEST_PARALLEL) -m "not repro and not network and not e2e")

lint: $(STAMP)
	$(call step,ruff check,$(BIN)/ruff check artbot repros tests)
	$(call step,ruff format --check,$(BIN)/ruff format --check artbot repros tests)
	$(call step,mypy on artbot/ and tests/ (about a minute),$(BIN)/mypy)

# Regenerate tests/golden/ after an intended change to templates or findings; review the diff.
golden: $(STAMP)
	$(call step,regenerating tests/golden/,$(BIN)/python -m tests.golden_update)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache

bench: $(STAMP)
	$(call step,benchmarks: requests per operation$(,) then start-up (about a minute),$(BIN)/python -m tests.benchmarks)
