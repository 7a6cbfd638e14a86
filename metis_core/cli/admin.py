"""`metis backup`, `metis restore` and `metis audit export`: looking after the metis database.

Thin commands over metis_core.trace.backup and .audit: a hot snapshot into one file, a guarded
restore (refused while the database exists unless --force; pg_dump / pg_restore on PostgreSQL),
and the audit-flagged events as JSONL or CSV, filtered by time and type. Progress on stderr.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli.failures import guarded
from metis_core.cli.local_data import database, db_path, parse_when, progress
from metis_core.cli.output import Terminal
from metis_core.errors import BackupError, StoreError
from metis_core.trace.audit import export_audit
from metis_core.trace.backup import backup as backup_database
from metis_core.trace.backup import restore as restore_database

audit_app = typer.Typer(help="Export the audit trail.", no_args_is_help=True)


class AuditFormat(StrEnum):
    JSONL = "jsonl"
    CSV = "csv"


def default_backup_path() -> Path:
    suffix = "db" if isinstance(database(), Path) else "dump"  # pg_dump's custom format on PostgreSQL
    return db_path().parent / "backups" / f"metis-{datetime.now(UTC):%Y%m%d-%H%M%S}.{suffix}"


@guarded
def backup(
    dest: Annotated[Path | None, typer.Argument(help="Backup file (default METIS_HOME/backups/metis-<time>.db).")]
    = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite DEST if it exists.")] = False,
) -> None:
    """Snapshot the database (consistent while metis runs) into one file."""
    terminal = Terminal.open()
    target = dest or default_backup_path()
    with progress(terminal, f"backing up to {target}") as update:
        try:
            result = backup_database(database(), target, overwrite=force)
        except BackupError:
            raise
        except (StoreError, OSError) as error:  # the snapshot goes through a temporary file beside DEST
            raise BackupError(f"cannot write the backup to {target}: {error}") from None
        update(1, 1)
    terminal.out.print("\n".join(result.lines()), markup=False)


@guarded
def restore(
    backup_file: Annotated[Path, typer.Argument(metavar="BACKUP", help="A file written by `metis backup`.")],
    force: Annotated[bool, typer.Option("--force", help="Replace the existing database.")] = False,
) -> None:
    """Replace the database with a backup (stop other metis processes first)."""
    terminal = Terminal.open()
    with progress(terminal, f"restoring {backup_file}") as update:
        result = restore_database(backup_file, database(), allow_overwrite=force)
        update(1, 1)
    terminal.out.print("\n".join(result.lines()), markup=False)


@audit_app.command("export")
@guarded
def audit_export(
    format: Annotated[AuditFormat, typer.Option("--format", "-f", help="jsonl or csv.")] = AuditFormat.JSONL,
    since: Annotated[str | None, typer.Option(help="From this date/time (UTC unless a zone is given).")] = None,
    until: Annotated[str | None, typer.Option(help="Before this date/time (exclusive).")] = None,
    types: Annotated[list[str] | None, typer.Option("--type", help="Only this audit event type (repeatable).")]
    = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default stdout).")] = None,
) -> None:
    """Audit events (confirmations, sweeps, key and policy changes) for compliance review."""
    terminal = Terminal.open()
    start, end = parse_when(since, "--since"), parse_when(until, "--until")
    buffer = io.StringIO(newline="")
    with progress(terminal, "exporting audit events") as update:
        count = export_audit(database(), buffer, format.value, since=start, until=end, types=types or None)
        update(count, count)
    if output is None:
        terminal.raw(buffer.getvalue())
    else:
        output.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    terminal.err.print(f"exported {count} audit events", markup=False)
