# Two commands from a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
OUT    ?= out

.PHONY: run test bench lint docs venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,ray,rl,docs]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/schedlab demo --output $(OUT)

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python tools/typecheck.py

# The documentation site, built in strict mode: a broken link or reference fails the build.
# (The variable silences mkdocs-material's end-of-life banner, which is not a build warning.)
docs: export NO_MKDOCS_2_WARNING = 1
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir $(OUT)/site

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
