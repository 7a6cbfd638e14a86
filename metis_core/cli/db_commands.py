"""`metis db migrate | status | copy`: the schema and the backend of the metis database.

`--url` names the database (a SQLite path, `sqlite:///path` or `postgresql://...`); without it,
METIS_DATABASE_URL, `database_url:` in config.yaml, or METIS_HOME/metis.db. Passwords in URLs are
never printed. `copy` moves a store between backends and checks counts and hashes.
"""

from __future__ import annotations

from typing import Annotated

import typer

from metis_core.cli.failures import guarded
from metis_core.cli.local_data import progress
from metis_core.cli.output import Terminal

app = typer.Typer(help="Migrate, inspect and copy the metis database (SQLite or PostgreSQL).", no_args_is_help=True)

UrlOption = Annotated[
    str | None, typer.Option("--url", help="Database (path, sqlite:///path or postgresql://...); default: configured.")
]


@app.command("status")
@guarded
def status(url: UrlOption = None) -> None:
    """The schema version and every numbered step, applied or pending (changes nothing)."""
    from metis_core.store.schema_status import database_status

    Terminal.open().out.print("\n".join(database_status(url).lines()), markup=False)


@app.command("migrate")
@guarded
def migrate(url: UrlOption = None) -> None:
    """Apply the pending steps, each in its own transaction (running it twice is harmless)."""
    from metis_core.store.schema_status import migrate_database

    Terminal.open().out.print("\n".join(migrate_database(url).lines()), markup=False)


@app.command("copy")
@guarded
def copy(
    source: Annotated[str, typer.Option("--from", help="The database to read (path, sqlite:///, postgresql://).")],
    target: Annotated[str, typer.Option("--to", help="An empty database to fill (created or migrated first).")],
) -> None:
    """Copy every table to an empty database in one transaction; counts and hashes are checked."""
    from metis_core.store.copy import copy_database

    terminal = Terminal.open()
    with progress(terminal, "copying") as update:
        report = copy_database(source, target, progress=update)
    terminal.out.print("\n".join(report.lines()), markup=False)
