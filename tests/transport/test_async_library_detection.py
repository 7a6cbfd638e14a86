"""httpcore asks `sniffio` which async library runs it, four times per async request; where sniffio
is not installed every ask is a failed import (~40-100 µs each, since failed imports are not
cached). metis-core declares sniffio so the async path never pays that (docs/dependencies.md)."""

from __future__ import annotations

import asyncio
import sys
import tomllib
from pathlib import Path

from httpcore._synchronization import current_async_library

ROOT = Path(__file__).resolve().parents[2]


def test_sniffio_is_a_declared_runtime_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(dep.split(">")[0].split("=")[0].strip() == "sniffio" for dep in project["dependencies"])


def test_httpcore_finds_the_async_library_through_an_import_that_succeeds() -> None:
    async def ask() -> str:
        return current_async_library()

    assert asyncio.run(ask()) == "asyncio"
    assert "sniffio" in sys.modules  # imported once and cached, not failed on every request
