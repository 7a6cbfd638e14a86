"""`metis trace show|tree|replay|export SESSION`, `trace prune`, `trace verify FILE`: the event trace.

show is a table, tree the causal tree (model, tokens, cost and latency per call), replay the
events as JSON lines in id order for scripts, export one session in an interoperable format
(OpenTelemetry GenAI, OpenWOP, agent event log v0.2). prune deletes non-audit events older than
the retention period (a dry run only counts) with a progress bar, and records trace.swept.
verify checks an exported event log's chain, hashes and schemas (exit 7 at the first break).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli.failures import guarded
from metis_core.cli.local_data import progress, session_store, trace_store
from metis_core.cli.output import Terminal
from metis_core.cli.session_ids import resolve_session_id
from metis_core.cli.trace_view import events_table, trace_tree
from metis_core.errors import SessionNotFoundError
from metis_core.events.envelope import SYSTEM_SESSION_ID, Event
from metis_core.trace.retention import DEFAULT_RETENTION_DAYS

app = typer.Typer(help="Show, replay and prune the event trace.", no_args_is_help=True)

SessionArgument = Annotated[str, typer.Argument(
    help=f"Session id, a unique prefix of one, `latest`, or {SYSTEM_SESSION_ID!r} for system events.")]


def resolved(session_id: str) -> str:
    """The whole id a prefix or `latest` names; ids with events but no stored session pass through."""
    if session_id == SYSTEM_SESSION_ID:
        return session_id
    with session_store() as store:
        if store.has_session(session_id):
            return session_id
        try:
            return resolve_session_id(store, session_id)
        except SessionNotFoundError:
            return session_id  # e.g. gateway traffic: events without a session row


def session_events(session_id: str) -> list[Event]:
    session_id = resolved(session_id)
    with trace_store() as trace:
        events = trace.replay(session_id)
    if not events and session_id != SYSTEM_SESSION_ID:
        with session_store() as store:
            if not store.has_session(session_id):
                raise SessionNotFoundError(f"no session {session_id}; `metis sessions list` shows the stored ones")
    return events


@app.command("show")
@guarded
def show(session_id: SessionArgument) -> None:
    Terminal.open().out.print(events_table(session_events(session_id)), soft_wrap=False)


@app.command("tree")
@guarded
def tree(session_id: SessionArgument) -> None:
    session_id = resolved(session_id)
    events = session_events(session_id)
    with trace_store() as trace:
        tree_view = trace_tree(session_id, events, trace.replay)
    Terminal.open().out.print(tree_view, soft_wrap=False)


@app.command("replay")
@guarded
def replay(session_id: SessionArgument) -> None:
    """The session's events as JSON lines, in the order they happened."""
    terminal = Terminal.open()
    terminal.raw("".join(event.model_dump_json() + "\n" for event in session_events(session_id)))


@app.command("prune")
@guarded
def prune(
    retention_days: Annotated[float, typer.Option(min=0, help="Keep events younger than this.")] = float(
        DEFAULT_RETENTION_DAYS),
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count only; delete nothing.")] = False,
) -> None:
    """Delete trace events older than the retention period; audit events are always kept."""
    terminal = Terminal.open()
    with progress(terminal, "pruning the trace") as update, trace_store() as trace:
        result = trace.prune(retention_days, dry_run=dry_run, progress=update)
    verb = "would delete" if dry_run else "deleted"
    terminal.out.print(
        f"{verb} {result.rows_deleted} events older than {result.cutoff_timestamp:%Y-%m-%d %H:%M:%S} UTC; "
        f"kept {result.rows_audit_exempt} older audit events", markup=False)


@app.command("export")
@guarded
def export(
    session_id: SessionArgument,
    export_format: Annotated[str, typer.Option("--format", help="otel | otel-metrics | openwop | eventlog")] = "otel",
    out: Annotated[Path | None, typer.Option("--out", help="File to write (default: standard output).")] = None,
    include_content: Annotated[bool, typer.Option(
        "--include-content", help="Copy message text and tool data into the export (off: hashes and sizes only).",
    )] = False,
) -> None:
    """One session as OpenTelemetry GenAI spans (OTLP/JSON), OpenWOP run events or an event log v0.2."""
    from metis_core.cli.exit_codes import UsageProblem
    from metis_core.export import EXPORT_FORMATS, ExportOptions

    exporter = EXPORT_FORMATS.get(export_format)
    if exporter is None:
        raise UsageProblem(f"unknown export format {export_format!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    terminal = Terminal.open()
    session_id = resolved(session_id)
    with session_store() as store, trace_store() as trace:
        summary = exporter(session_id, store, trace, out if out is not None else sys.stdout.buffer,
                           ExportOptions(include_content=include_content))
    skipped = f", {summary.skipped_total} without a counterpart" if summary.skipped_total else ""
    where = f" to {summary.path}" if summary.path else ""
    head = f"; head {summary.head_hash} (check later: metis trace verify FILE --head HASH)" if summary.head_hash else ""
    terminal.err.print(f"exported {summary.exported} of {summary.events_read} events as {summary.documents} "
                       f"{export_format} document(s){where}{skipped}{head}", style="dim", markup=False)


@app.command("verify")
@guarded
def verify(
    file: Annotated[Path | None, typer.Argument(help="An event log v0.2 (JSON Lines) written by `trace export`.",
                                                exists=True, dir_okay=False)] = None,
    store: Annotated[bool, typer.Option("--store", help="Check the whole trace store instead: every event's "
                                                        "parent is stored (or was pruned by retention).")] = False,
    head: Annotated[str | None, typer.Option("--head", help="The head hash recorded at export time; a log "
                                                           "cut short ends elsewhere.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as one JSON document.")] = False,
) -> None:
    """Check an exported event log (hash chain, payload hashes, schemas; the first broken entry named),
    or with --store the stored trace (every parent_event_id exists)."""
    import orjson

    from metis_core.cli.exit_codes import UsageProblem
    from metis_core.errors import EventLogIntegrityError
    from metis_core.export import verify_event_log

    if (file is None) == (not store):
        raise UsageProblem("give an exported event log FILE, or --store to check the trace store (not both)")
    if file is None:
        verify_store(as_json)
        return

    try:
        with file.open("rb") as lines:
            result = verify_event_log(lines)
    except OSError as error:
        raise UsageProblem(f"cannot read {file}: {error.strerror or error}; check the path and permissions") from None
    failure: EventLogIntegrityError | None = None
    broken = result.first_break
    if broken is not None:
        at = f"line {broken.line}" + (f" (sequence {broken.sequence})" if broken.sequence is not None else "")
        failure = EventLogIntegrityError(
            f"{file}: broken at {at}: {broken.reason}; the {result.entries} entries before it verify",
            line=broken.line, sequence=broken.sequence)
    elif head is not None and result.head_hash != head:
        failure = EventLogIntegrityError(
            f"{file}: the {result.entries} entries verify but end at head {result.head_hash}, not {head}: "
            "entries were cut off the end, or this is another log")
    terminal = Terminal.open()
    if as_json:
        terminal.raw(orjson.dumps({
            "file": str(file), "ok": failure is None, "entries": result.entries, "head_hash": result.head_hash,
            "first_break": None if broken is None else {"line": broken.line, "sequence": broken.sequence,
                                                        "reason": broken.reason},
            "error": None if failure is None else str(failure),
        }).decode() + "\n")
    if failure is not None:
        raise failure
    if not as_json:
        terminal.out.print(f"{file}: intact, {result.entries} entries, head {result.head_hash}", markup=False)


def verify_store(as_json: bool) -> None:
    """`trace verify --store`: every parent_event_id in the store names a stored event."""
    import orjson

    from metis_core.errors import TraceIntegrityError

    with trace_store() as trace:
        check = trace.check_parents()
    failure: TraceIntegrityError | None = None
    if check.gaps:
        first = check.gaps[0]
        failure = TraceIntegrityError(
            f"{check.missing_parents} parent event(s) in {len(check.gaps)} gap(s) were never stored, first in "
            f"session {first.session_id} (missing {first.missing_ids[0]}); "
            "`metis trace verify --store --json` lists them all. Events emitted but lost (a crash before "
            "the trace writer committed) cannot be recovered; "
            "the sessions themselves are intact", missing_parents=check.missing_parents)
    terminal = Terminal.open()
    if as_json:
        terminal.raw(orjson.dumps({
            "store": True, "ok": failure is None, "events": check.events, "with_parent": check.with_parent,
            "pruned_parents": check.pruned_parents, "missing_parents": check.missing_parents,
            "gaps": [{"session_id": g.session_id, "missing_ids": list(g.missing_ids)} for g in check.gaps],
            "error": None if failure is None else str(failure),
        }).decode() + "\n")
    if failure is not None:
        raise failure
    if not as_json:
        pruned = f" (or pruned by retention: {check.pruned_parents})" if check.pruned_parents else ""
        terminal.out.print(f"trace store intact: {check.events} events; the parents of all {check.with_parent} "
                           f"that name one are stored{pruned}", markup=False)
