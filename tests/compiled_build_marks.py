"""`pure_only`: the mark of a test that cannot run on the compiled build (make test-compiled), with why.

Compiled modules bind their calls at build time and check their annotations at run time, so a test
that monkeypatches a compiled module's internals, subclasses a compiled class, or hands a compiled
method a stand-in object tests nothing there. The pure run (make test) covers its logic.
"""

from __future__ import annotations

import os

import pytest

COMPILED = os.environ.get("METIS_EXPECT_COMPILED") == "1"


def pure_only(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(COMPILED, reason=f"pure Python only: {reason}")
