# Two commands a newcomer needs: `make chat` (the main job) and `make test` (the test suite).
# Each creates .venv on first use with what it needs: chat installs metis-core and its runtime
# dependencies only (`pip install -e .`); test adds the dev extra (pytest, ruff, mypy, the SDKs
# the tests compare against). Separate stamps: `make chat` never pulls in the test tools.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CHAT_STAMP := $(VENV)/.installed-chat
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: chat demo test test-compiled wheel-compiled lint typecheck bench clean

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
	$(BIN)/pytest

# The compiled build (setup.py, docs/gateway.md "The compiled build"): the gateway's hot path as C
# extensions made by mypyc, shipped as a wheel; never editable, so no .so ever shadows an edited .py.
# test-compiled installs that wheel in its own venv and runs the tests of the compiled modules
# against it (tests/conftest.py stops the run if they would import the .py files); .ci/run runs it.
COMPILED_VENV := .venv-compiled
COMPILED_TESTS := tests/gateway tests/adapters tests/messages tests/store tests/events tests/trace \
	tests/routing tests/transport tests/test_ids.py tests/test_compiled_build.py

wheel-compiled: $(DEV_STAMP)
	rm -rf build dist/metis_core-*.whl
	METIS_COMPILE=1 $(BIN)/pip wheel --quiet --no-build-isolation --no-deps -w dist .

test-compiled: wheel-compiled
	rm -rf $(COMPILED_VENV)
	$(PYTHON) -m venv $(COMPILED_VENV)
	$(COMPILED_VENV)/bin/pip install --quiet --upgrade pip
	$(COMPILED_VENV)/bin/pip install --quiet "$$(ls dist/metis_core-*-cp*.whl)[dev]"
	METIS_EXPECT_COMPILED=1 $(COMPILED_VENV)/bin/pytest -p no:cacheprovider $(COMPILED_TESTS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check metis_core tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) $(COMPILED_VENV) build dist bench/.venv bench/.venv-lean .pytest_cache .mypy_cache .ruff_cache
