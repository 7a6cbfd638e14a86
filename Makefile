# Two commands a newcomer needs: `make chat` (the main job) and `make test` (the test suite).
# Both create .venv with everything they need on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: chat demo test lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

chat: $(STAMP)
	$(BIN)/metis chat

demo: $(STAMP)
	$(BIN)/metis demo

test: $(STAMP)
	$(BIN)/ruff check metis_core tests bench
	$(BIN)/mypy
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check metis_core tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) bench/.venv .pytest_cache .mypy_cache .ruff_cache
