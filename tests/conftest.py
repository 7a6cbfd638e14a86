"""Shared test setup: strict event validation, an isolated METIS_HOME, and the fixtures folder.

Recorded provider traffic is read from ../shared/fixtures (or $METIS_FIXTURES) at test time and
never copied into the project.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("METIS_BUS_MODE", "strict")

_REPO = Path(__file__).resolve().parent.parent


def fixtures_root() -> Path:
    configured = os.environ.get("METIS_FIXTURES")
    root = Path(configured) if configured else _REPO.parent / "shared" / "fixtures"
    if not (root / "INDEX.md").is_file():
        raise RuntimeError(
            f"provider fixtures not found at {root}; check out ../shared beside the repo "
            "or point METIS_FIXTURES at the fixtures folder"
        )
    return root


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return fixtures_root()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own METIS_HOME and no provider keys from the developer's shell."""
    home = tmp_path_factory.mktemp("metis_home")
    monkeypatch.setenv("METIS_HOME", str(home))
    for var in list(os.environ):
        if var.endswith("_API_KEY") or (var.startswith("METIS_") and var.endswith("_BASE_URL")):
            monkeypatch.delenv(var, raising=False)
    return home
