# Two commands: `make demo` and `make test`. Both create .venv on first use and are quick after.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test trace bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_DEMO): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(STAMP_DEMO)

demo: $(STAMP_DEMO)
	$(BIN)/llm-from-scratch ch18

trace: $(STAMP_DEMO)
	$(BIN)/llm-from-scratch ch18 trace

bench: $(STAMP_DEMO)
	$(BIN)/llm-from-scratch bench embedding --quick

test: $(STAMP_TEST)
	$(BIN)/python -m pytest src tests
	$(BIN)/ruff check src tests
	$(BIN)/mypy --strict src

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
