"""Shared test setup: strict event validation, an isolated METIS_HOME, and the fixtures folder.

Recorded provider traffic is read from tests/data/shared/fixtures (a copy of the recordings the tests
use, each with its provenance file; $METIS_FIXTURES points elsewhere), so a clone alone passes its tests.
"""

from __future__ import annotations

import os
from pathlib import Path

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


def pytest_sessionstart(session: pytest.Session) -> None:
    """METIS_EXPECT_COMPILED=1 (make test-compiled): stop unless the compiled build is what gets imported.

    Without it, the suite would pass just as well on the source tree's .py files and test nothing compiled."""
    if os.environ.get("METIS_EXPECT_COMPILED") != "1":
        return
    from metis_core.compiled_build import COMPILED_MODULES, build_name, is_compiled

    interpreted = [module for module in COMPILED_MODULES if not is_compiled(module)]
    if interpreted:
        pytest.exit(f"METIS_EXPECT_COMPILED=1 but these run from .py files: {', '.join(interpreted)} "
                    f"(build: {build_name()}); run the tests in the venv make test-compiled builds", returncode=3)
    import metis_core

    if Path(metis_core.__file__).resolve().is_relative_to(_REPO / "metis_core"):
        pytest.exit(f"METIS_EXPECT_COMPILED=1 but metis_core comes from the source tree ({metis_core.__file__})",
                    returncode=3)
