"""Shared test setup: strict event validation, an isolated METIS_HOME, and the fixtures folder.

Recorded provider traffic is read from tests/data/shared/fixtures (a copy of the recordings the tests
use, each with its provenance file; $METIS_FIXTURES points elsewhere), so a clone alone passes its tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("METIS_BUS_MODE", "strict")

_REPO = Path(__file__).resolve().parent.parent


def fixtures_root() -> Path:
    configured = os.environ.get("METIS_FIXTURES")
    root = Path(configured) if configured else _REPO / "tests" / "data" / "shared" / "fixtures"
    if not (root / "INDEX.md").is_file():
        raise RuntimeError(
            f"provider fixtures not found at {root}; the clone is incomplete, "
            "or METIS_FIXTURES points at a folder without INDEX.md"
        )
    return root


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return fixtures_root()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own METIS_HOME and no provider keys or database URL from the developer's shell."""
    home = tmp_path_factory.mktemp("metis_home")
    monkeypatch.setenv("METIS_HOME", str(home))
    monkeypatch.delenv("METIS_DATABASE_URL", raising=False)
    monkeypatch.delenv("METIS_DATABASE_POOL_SIZE", raising=False)
    for var in list(os.environ):
        if var.endswith("_API_KEY") or (var.startswith("METIS_") and var.endswith("_BASE_URL")):
            monkeypatch.delenv(var, raising=False)
    return home



@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """A started cloud server (tests/cloud_server.py) and a service-account key file it grants tokens to."""
    from cloud_server import serving_cloud

    server, key_file = serving_cloud(tmp_path_factory.mktemp("adc"))
    yield server, key_file
    server.stop()
