"""The stores under METIS_HOME for commands that only read or administer them (no Runtime, no bus).

Also the small shared pieces of those commands: progress on stderr for long operations, and
parsing of `--since/--until` dates. Commands that run turns open a Runtime instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from metis_core.cli.output import Terminal
from metis_core.store.backend import Location, database_location
from metis_core.store.db import default_db_path

if TYPE_CHECKING:
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
    from metis_core.store.sessions import SessionStore  # the message model: not for commands that list keys

    return SessionStore(database())


def trace_store() -> TraceStore:
    from metis_core.trace.store import TraceStore  # the event catalog: only commands that read events load it

    return TraceStore(database())


@contextmanager
def progress(terminal: Terminal, description: str) -> Iterator[ProgressUpdate]:
    """A progress bar on stderr (only on a terminal); call the update with (done, total)."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # not for lists

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}"),
                   TimeElapsedColumn(), console=terminal.err, transient=True,
                   disable=not terminal.err.is_terminal)
    with bar:
        task = bar.add_task(description, total=None)

        def update(done: int, whole: int) -> None:
            bar.update(task, completed=done, total=max(whole, done) or None)

        yield update


AGE = re.compile(r"^(\d+)([dhm])$")
AGE_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def parse_when(value: str | None, option: str) -> datetime | None:
    """`2026-05-01`, `2026-05-01T12:00[:00][Z|+02:00]` (no zone: UTC), or an age back from now: 7d, 12h, 30m."""
    if value is None:
        return None
    age = AGE.match(value.strip())
    if age is not None:
        return datetime.now(UTC) - timedelta(**{AGE_UNITS[age.group(2)]: int(age.group(1))})
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date or an age; write 2026-05-01, 2026-05-01T12:00Z or 7d",
                                 param_hint=option) from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
