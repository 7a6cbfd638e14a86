"""The compiled build (setup.py, METIS_COMPILE=1): its module list, and which build a run imports.

`make test` runs on the editable install, which must stay pure Python with no extension in the
source tree; `make test-compiled` runs these and the compiled modules' own tests on the wheel,
where every listed module must be a C extension (tests/conftest.py refuses the run otherwise).
"""

from __future__ import annotations

import importlib
import os
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from metis_core.compiled_build import COMPILED_MODULES, build_name, is_compiled

REPO = Path(__file__).resolve().parent.parent
EXPECT_COMPILED = os.environ.get("METIS_EXPECT_COMPILED") == "1"


def test_every_listed_module_is_a_module_of_the_source_tree() -> None:
    assert len(set(COMPILED_MODULES)) == len(COMPILED_MODULES)
    for module in COMPILED_MODULES:
        assert (REPO / (module.replace(".", "/") + ".py")).is_file(), module


def test_no_compiled_extension_sits_in_the_source_tree() -> None:
    """A stale .so beside its .py would be imported instead of the edited source."""
    found = [path for suffix in EXTENSION_SUFFIXES for path in (REPO / "metis_core").rglob("*" + suffix)]
    found += list(REPO.glob("metis_core__mypyc*"))
    assert found == []


@pytest.mark.skipif(EXPECT_COMPILED, reason="the editable (pure) install only")
def test_the_editable_install_runs_pure_python() -> None:
    assert build_name() == "pure Python"
    assert not any(is_compiled(module) for module in COMPILED_MODULES)


@pytest.mark.skipif(not EXPECT_COMPILED, reason="the compiled wheel only (make test-compiled)")
def test_the_wheel_runs_every_listed_module_compiled() -> None:
    assert build_name() == "compiled (mypyc)"
    for module in COMPILED_MODULES:
        origin = Path(importlib.import_module(module).__file__ or "")
        assert origin.name.endswith(tuple(EXTENSION_SUFFIXES)), origin
        assert not origin.resolve().is_relative_to(REPO / "metis_core"), origin  # installed, not built in place


@pytest.mark.skipif(not EXPECT_COMPILED, reason="the compiled wheel only (make test-compiled)")
def test_compiled_classes_refuse_interpreted_subclasses_unless_marked() -> None:
    """What a compiled build changes for callers: a native class is final to interpreted code."""
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.events.dispatch_worker import FlushBarrier

    class Barrier(FlushBarrier):  # marked allow_interpreted_subclasses: the bus extends it
        pass

    class IdMap(ToolIdMap):
        pass

    assert isinstance(Barrier(), FlushBarrier)
    with pytest.raises(TypeError, match="interpreted classes cannot inherit from compiled"):
        IdMap()  # refused when an instance is made
