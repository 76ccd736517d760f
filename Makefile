# Two commands from a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
OUT    ?= out
# What `make run` needs: schedlab and the `learned` extra (torch, for the shipped DeepRM
# policies of the study). What the fast tests need: every extra but Ray (its tests are in the
# slow tier; about 10 s less to install). What `make test-all`, `make lint`, `make docs` and
# `make bench` need: every extra.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
DEV_STAMP := $(VENV)/.installed-dev
TEST_EXTRAS := learned,rl,dev,docs
DEV_EXTRAS := $(TEST_EXTRAS),ray
# setuptools says "Editable installation. Please be careful with folders in your working
# directory with the same name as your package" on every editable install of a layout mapped
# with package-dir (ours, design.md §1): information, not a packaging problem; only that
# message is silenced. pip's own progress stays visible.
EDITABLE := PYTHONWARNINGS="ignore:Editable installation"

.PHONY: run test test-all bench lint docs venv kernels clean

venv: $(DEV_STAMP)

$(BIN)/python:
	@echo "== creating $(VENV) with $(PYTHON) and upgrading pip"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml constraints.txt | $(BIN)/python
	@echo "== installing schedlab and its 'learned' extra (torch, for the shipped DeepRM policies) into $(VENV); pinned by constraints.txt"
	$(EDITABLE) $(PIP) install -c constraints.txt -e '.[learned]'
	$(BIN)/schedlab compile
	touch $@

$(TEST_STAMP): pyproject.toml constraints.txt | $(BIN)/python
	@echo "== installing schedlab with the extras the tests need ($(TEST_EXTRAS): torch, Stable-Baselines3, test and lint tools, docs) into $(VENV); pinned by constraints.txt"
	$(EDITABLE) $(PIP) install -c constraints.txt -e '.[$(TEST_EXTRAS)]'
	$(BIN)/schedlab compile
	touch $@ $(RUN_STAMP)

$(DEV_STAMP): $(TEST_STAMP)
	@echo "== adding Ray: every extra ($(DEV_EXTRAS)); pinned by constraints.txt"
	$(EDITABLE) $(PIP) install -c constraints.txt -e '.[$(DEV_EXTRAS)]'
	touch $@

run: $(RUN_STAMP)
	$(BIN)/schedlab demo --output $(OUT)

# The fast tier (small seeded cases of every behaviour, in parallel); `make test-all` adds the
# slow tier (whole traces, training, sweeps, Ray: tests marked `slow`).
test: $(TEST_STAMP)
	$(BIN)/python -m pytest -n auto

test-all: $(DEV_STAMP)
	$(BIN)/python -m pytest -n auto -m "slow or not slow"

bench: $(DEV_STAMP)
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python tools/typecheck.py

# The documentation site, built in strict mode: a broken link or reference fails the build.
# (The variable silences mkdocs-material's end-of-life banner, which is not a build warning.)
docs: export NO_MKDOCS_2_WARNING = 1
docs: $(DEV_STAMP)
	$(BIN)/mkdocs build --strict --site-dir $(OUT)/site

# After editing a compiled module: numba's cache notices a change in a kernel's own file, not in
# the helpers it inlines (simulator/cluster/core.py, heap.py, ...), so recompile them all.
kernels: $(RUN_STAMP)
	find schedlab traces loaders simulator policies evaluation reports -name '*.nb[ic]' -delete
	$(BIN)/schedlab compile

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
