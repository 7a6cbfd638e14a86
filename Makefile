# Two commands a newcomer needs: `make chat` (the main job) and `make test` (the test suite).
# Each creates .venv on first use with what it needs: chat installs metis-core and its runtime
# dependencies only (`pip install -e .`); test adds the dev extra (pytest, ruff, mypy, the SDKs
# the tests compare against). Separate stamps: `make chat` never pulls in the test tools.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CHAT_STAMP := $(VENV)/.installed-chat
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: chat demo test lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(CHAT_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $(CHAT_STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP) $(CHAT_STAMP)

chat: $(CHAT_STAMP)
	$(BIN)/metis chat

demo: $(CHAT_STAMP)
	$(BIN)/metis demo

test: $(DEV_STAMP)
	$(BIN)/ruff check metis_core tests bench
	$(BIN)/mypy
	$(BIN)/pytest -n auto

lint: $(DEV_STAMP)
	$(BIN)/ruff check metis_core tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build dist bench/.venv bench/.venv-lean .pytest_cache .mypy_cache .ruff_cache
