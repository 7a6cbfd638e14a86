"""The one parametrized fixture the store and trace suites share: a database on each backend.

`db_location` is a SQLite file path or a `postgresql://` URL of a fresh database on the
throwaway server (tests/postgres_server.py). Tests written against it run on both backends.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import shared_server, stop_shared_server

BACKENDS = ("sqlite", "postgres")


@pytest.fixture(scope="session")
def _postgres_session() -> Iterator[None]:
    yield
    stop_shared_server()


@pytest.fixture(params=BACKENDS)
def db_location(request: pytest.FixtureRequest, tmp_path: Path, _postgres_session: None) -> Path | str:
    if request.param == "sqlite":
        return tmp_path / "metis.db"
    return shared_server().fresh_database_url()


@pytest.fixture
def postgres_url(tmp_path: Path, _postgres_session: None) -> str:
    return shared_server().fresh_database_url()


def execute_on(location: Path | str, sql: str, rows: list[tuple[object, ...]] | None = None) -> None:
    """Run portable SQL (`?` placeholders) on a separate connection, in one transaction."""
    from metis_core.store.backend import open_backend

    db = open_backend(location)
    try:
        with db.transaction():
            for row in rows if rows is not None else [()]:
                db.execute(sql, row)
    finally:
        db.close()


def scalar_on(location: Path | str, sql: str) -> object:
    """The first column of the first row of `sql`, read on a separate connection."""
    from metis_core.store.backend import open_backend

    db = open_backend(location)
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()
