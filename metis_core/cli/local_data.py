"""The stores under METIS_HOME for commands that only read or administer them (no Runtime, no bus).

Also the small shared pieces of those commands: progress on stderr for long operations, and
parsing of `--since/--until` dates. Commands that run turns open a Runtime instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from metis_core.cli.output import Terminal
from metis_core.store.backend import Location, database_location
from metis_core.store.db import default_db_path
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

ProgressUpdate = Callable[[int, int], None]


def db_path() -> Path:
    return default_db_path()


def database() -> Location:
    """METIS_DATABASE_URL, `database_url:` in config.yaml, or METIS_HOME/metis.db."""
    where = database_location()
    if isinstance(where, Path):
        where.parent.mkdir(parents=True, exist_ok=True)
    return where


def session_store() -> SessionStore:
    return SessionStore(database())


def trace_store() -> TraceStore:
    return TraceStore(database())


@contextmanager
def progress(terminal: Terminal, description: str) -> Iterator[ProgressUpdate]:
    """A progress bar on stderr (only on a terminal); call the update with (done, total)."""
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}"),
                   TimeElapsedColumn(), console=terminal.err, transient=True,
                   disable=not terminal.err.is_terminal)
    with bar:
        task = bar.add_task(description, total=None)

        def update(done: int, whole: int) -> None:
            bar.update(task, completed=done, total=max(whole, done) or None)

        yield update


def parse_when(value: str | None, option: str) -> datetime | None:
    """`2026-05-01` or `2026-05-01T12:00[:00][Z|+02:00]`; a time without a zone is UTC."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date; write 2026-05-01 or 2026-05-01T12:00Z",
                                 param_hint=option) from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
