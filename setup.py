"""Build script: pure Python by default; METIS_COMPILE=1 compiles the gateway's hot path with mypyc.

Metadata lives in pyproject.toml. The compiled build is a wheel only, made in an environment that
has the dev extra (mypy type-checks the package while compiling it):

    METIS_COMPILE=1 pip wheel --no-build-isolation --no-deps -w dist .    # or: make wheel-compiled

Editable installs stay pure Python, always: a compiled module beside its .py would shadow every
later edit of it, so building extensions in place is refused. docs/gateway.md, "The compiled build".
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
COMPILE = os.environ.get("METIS_COMPILE", "") == "1"


class BuildExtNotInPlace(build_ext):
    """build_ext that never writes an extension into the source tree (editable or --inplace)."""

    def run(self) -> None:
        if self.extensions and (self.inplace or getattr(self, "editable_mode", False)):
            raise SystemExit("METIS_COMPILE=1 builds a wheel, never an editable or in-place install: a compiled "
                             "module in the source tree would shadow its .py. Run: make wheel-compiled")
        super().run()


def compiled_extensions() -> list[object]:
    if not COMPILE:
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        raise SystemExit("METIS_COMPILE=1 needs mypy (the dev extra) in the building environment, and pip's "
                         "--no-build-isolation: pip install -e '.[dev]', then make wheel-compiled") from None
    listed = runpy.run_path(str(HERE / "metis_core" / "compiled_build.py"))["COMPILED_MODULES"]
    paths = [module.replace(".", "/") + ".py" for module in listed]
    return list(mypycify(paths, opt_level="3", debug_level="0", group_name="metis_core"))


setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": BuildExtNotInPlace})
