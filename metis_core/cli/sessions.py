"""`metis sessions list|show|export|import|delete`: the stored conversations.

Reads and writes through SessionStore. `show` renders each message by its blocks (text, tool
calls and results, images by reference), `export` writes the store's JSON export (without the
memory tool's text, memory_withheld.py), `import`
refuses an id that already exists unless --as-new stores a renumbered copy, and `delete` removes
a session (its audit events stay) and records session.deleted in the audit trail. Ids may be
given whole, as a unique prefix, or as `latest` (session_ids.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from metis_core.cli.failures import guarded
from metis_core.cli.local_data import progress, session_store, trace_store
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import cost_text, format_usd, preview, print_rows, sessions_rows
from metis_core.cli.session_ids import resolve_session_id

if TYPE_CHECKING:  # the message model and rich's text load for `show`, not for `list`
    from rich.text import Text

    from metis_core.messages import Message
    from metis_core.store.sessions import SessionDeletion

app = typer.Typer(help="List, show, export and import stored sessions.", no_args_is_help=True)

SessionArgument = Annotated[str, typer.Argument(help="Session id, a unique prefix of one, or `latest`.")]
ROLE_STYLES = {"user": "bold", "assistant": "green", "tool": "cyan", "system": "magenta"}


def message_text(message: Message) -> Text:
    from rich.text import Text

    from metis_core.messages import ImageBlock, MessageStatus, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock

    role = message.role.value
    head = Text(f"{role}", style=ROLE_STYLES.get(role, ""))
    meta = message.metadata
    if meta.model:
        usage = meta.usage
        cost = format_usd(usage.cost_usd) if usage is not None and usage.cost_usd is not None else "cost unknown"
        head.append(f"  {meta.model} · {cost}", style="dim")
    if message.status is not MessageStatus.COMPLETE:
        head.append(f"  [{message.status.value}]", style="yellow")
    lines = [head]
    for block in message.content:
        if isinstance(block, TextBlock):
            lines.append(Text(block.text))
        elif isinstance(block, ThinkingBlock):
            lines.append(Text(block.text, style="dim italic"))
        elif isinstance(block, ToolUseBlock):
            lines.append(Text(f"→ {block.name} {json.dumps(block.input, ensure_ascii=False)}", style="cyan"))
        elif isinstance(block, ToolResultBlock):
            body = " ".join(b.text for b in block.content if isinstance(b, TextBlock))
            lines.append(Text(f"← {'error: ' if block.is_error else ''}{preview(body)}", style="cyan"))
        elif isinstance(block, ImageBlock):
            where = block.source.data if block.source.kind != "base64" else "inline"
            lines.append(Text(f"[image {block.media_type} {where}]", style="dim"))
    return Text("\n").join(lines)


@app.command("list")
@guarded
def list_sessions(
    limit: Annotated[int, typer.Option(min=1, help="How many, most recent first.")] = 50,
    search: Annotated[str | None, typer.Option(help="Only sessions whose title or text contains this.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array for scripts.")] = False,
    plain: PlainOption = False,
) -> None:
    """Stored sessions, most recent first (plain tab-separated rows when piped)."""
    terminal = Terminal.open()
    with session_store() as store:
        records = store.search_sessions(search, limit) if search else store.list_sessions(limit)
        answered = store.answering_models([r.id for r in records])
    if as_json:  # `answered_by`: the model of the session's last answer, as the table's model column
        listed = [{**r.to_json_dict(), "answered_by": answered.get(r.id)} for r in records]
        terminal.raw(json.dumps(listed, indent=2) + "\n")
    else:
        print_rows(terminal, sessions_rows(records, answered), plain=plain)


@app.command("show")
@guarded
def show(
    session_id: SessionArgument,
    as_json: Annotated[bool, typer.Option("--json", help="The session's export document.")] = False,
) -> None:
    terminal = Terminal.open()
    with session_store() as store:
        session_id = resolve_session_id(store, session_id)
        if as_json:
            terminal.raw(json.dumps(store.export_session(session_id), indent=2, ensure_ascii=False) + "\n")
            return
        record = store.get_session(session_id)
        messages = store.load_messages(session_id)
        totals = store.session_totals(session_id)
        replays = [r.id for r in store.replays_of(session_id)]
    out = terminal.out
    out.print(f"session {record.id}" + (f" · {record.title}" if record.title else ""), style="bold", markup=False)
    out.print(f"workspace {record.workspace_path} · model {record.active_model or '(default)'} · "
              f"{len(messages)} messages · {cost_text(totals.cost_usd, totals.unpriced_message_count)} · created "
              f"{record.created_at:%Y-%m-%d %H:%M} · {record.disposition or 'open'}", style="dim", markup=False)
    if record.replay_of:
        out.print(f"replay of session {record.replay_of}", style="dim", markup=False)
    if replays:
        out.print(f"replayed as {', '.join(replays)}", style="dim", markup=False)
    for message in messages:
        out.print()
        out.print(message_text(message))


@app.command("export")
@guarded
def export(
    session_id: SessionArgument,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default stdout).")] = None,
) -> None:
    from metis_core.cli.memory_withheld import withhold_memory_text  # hashing: only an export needs it

    terminal = Terminal.open()
    with progress(terminal, f"exporting {session_id}") as update, session_store() as store:
        session_id = resolve_session_id(store, session_id)
        document = withhold_memory_text(store.export_session(session_id))
        update(1, 1)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        terminal.raw(text)
    else:
        output.write_text(text, encoding="utf-8")
        terminal.err.print(f"exported session {session_id} ({len(document.get('messages', []))} messages) to "
                           f"{output}", markup=False)


@app.command("import")
@guarded
def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `metis sessions export`.", exists=True,
                                         dir_okay=False)],
    as_new: Annotated[bool, typer.Option("--as-new", help="Store a copy under fresh ids.")] = False,
) -> None:
    terminal = Terminal.open()
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as error:
        raise typer.BadParameter(f"{file} is not JSON ({error})", param_hint="FILE") from None
    with session_store() as store:
        record = store.import_session(document, as_new_session=as_new)
        count = store.message_count(record.id)
    terminal.out.print(f"imported session {record.id} ({count} messages)", markup=False)


@app.command("delete")
@guarded
def delete(
    session_id: SessionArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a session: its messages, tool calls and trace (audit events are kept); recorded in the audit."""
    terminal = Terminal.open()
    with session_store() as store:
        session_id = resolve_session_id(store, session_id)
        record = store.get_session(session_id)
        count = store.message_count(session_id)
        if not terminal.confirmed(f"delete {session_id} ({record.title or 'untitled'}, {count} messages)?",
                                  yes=yes, act=f"deleting {session_id}"):
            return
        deletion = store.delete_session(session_id)
    record_deletion(deletion)
    terminal.out.print(f"deleted session {session_id} ({deletion.messages_deleted} messages, "
                       f"{deletion.events_deleted} trace events; {deletion.audit_events_kept} audit events kept)",
                       markup=False)


def record_deletion(deletion: SessionDeletion) -> None:
    """session.deleted in the `system` session (the deleted one is gone), as the person's act."""
    from metis_core.events.catalog import make_event
    from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor
    from metis_core.hashing import sha256_hex

    event = make_event("session.deleted", {
        "deleted_session_id": deletion.record.id, "workspace_hash": sha256_hex(deletion.record.workspace_path),
        "message_count": deletion.messages_deleted, "events_deleted": deletion.events_deleted,
        "audit_events_kept": deletion.audit_events_kept,
    }, session_id=SYSTEM_SESSION_ID, actor=Actor.USER)
    with trace_store() as trace:
        trace.append(event)
