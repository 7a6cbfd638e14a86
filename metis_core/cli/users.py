"""`metis users create|list|disable|export|forget`: the people behind the gateway's pseudonymous
`usr_<ulid>` ids, and what it takes for one of them to leave (docs/users.md).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.local_data import database, session_store, trace_store
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import Rows, print_rows

if TYPE_CHECKING:
    from metis_core.store.gateway_keys import GatewayKeyStore
    from metis_core.store.users import UserStore

app = typer.Typer(help="Users behind gateway keys: create, list, disable, export, forget.", no_args_is_help=True)

UserArgument = Annotated[str, typer.Argument(help="The user's id, usr_<ulid>.")]


@contextmanager
def _stores() -> Iterator[tuple[UserStore, GatewayKeyStore]]:
    from metis_core.store.gateway_keys import open_gateway_key_store
    from metis_core.store.users import UserStore

    users = UserStore(database())
    keys = open_gateway_key_store(database())
    try:
        yield users, keys
    finally:
        keys.close()
        users.close()


def _checked(user_id: str) -> str:
    from metis_core.gateway.keys import check_subject_id

    checked = check_subject_id(user_id, "user")
    if checked is None or user_id == "new":
        raise UsageProblem("give a user id, usr_<ulid> (`metis users list` shows them)")
    return checked


@app.command("create")
@guarded
def create(
    name: Annotated[str | None, typer.Option(help="The person's name (kept only in the registry).")] = None,
    email: Annotated[str | None, typer.Option(help="Their e-mail (kept only in the registry).")] = None,
    team: Annotated[str | None, typer.Option(help="team_<ulid>, or `new` to mint one.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the new user as JSON.")] = False,
) -> None:
    """Add a user; prints the usr_ id to pass to `metis gateway keys issue --user`."""
    from metis_core.gateway.keys import check_subject_id, new_subject_id

    team_id = check_subject_id(team, "team")
    with _stores() as (users, _):
        record = users.create(new_subject_id("user"), name=name, email=email, team_id=team_id)
    terminal = Terminal.open()
    if as_json:
        terminal.raw(json.dumps(record.as_json()) + "\n")
    else:
        terminal.out.print(f"user {record.id} created; issue a key: metis gateway keys issue --user {record.id} "
                           "--name NAME", markup=False)


@app.command("list")
@guarded
def list_users(
    as_json: Annotated[bool, typer.Option("--json", help="Print the users as a JSON array.")] = False,
    plain: PlainOption = False,
) -> None:
    """Every user of the registry with their status and keys (forgotten ones show no name)."""
    with _stores() as (users, keys):
        records = users.list()
        key_count: dict[str, int] = {}
        for key in keys.list_keys():
            if key.user_id is not None:
                key_count[key.user_id] = key_count.get(key.user_id, 0) + 1
    terminal = Terminal.open()
    if as_json:
        terminal.raw(json.dumps([{**r.as_json(), "keys": key_count.get(r.id, 0)} for r in records]) + "\n")
        return
    rows = Rows(("user", "status", "name", "email", "team", "keys", "created"))
    for r in records:
        rows.rows.append((r.id, r.status, r.name or "", r.email or "", r.team_id or "", str(key_count.get(r.id, 0)),
                          r.created_at.strftime("%Y-%m-%d %H:%M")))
    print_rows(terminal, rows, plain=plain)


@app.command("disable")
@guarded
def disable(user_id: UserArgument) -> None:
    """Stop a user: their keys are revoked (gateway.key_revoked each); the record stays."""
    from datetime import UTC, datetime

    from metis_core.events.catalog import make_event
    from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor

    user_id = _checked(user_id)
    now = datetime.now(UTC)
    with _stores() as (users, keys), trace_store() as trace:
        users.disable(user_id)
        revoked = [k.id for k in keys.list_keys()
                   if k.user_id == user_id and k.revoked_at is None and keys.revoke(k.id, now, "admin_revoke")]
        for key_id in revoked:
            trace.append(make_event("gateway.key_revoked", {"gateway_key_id": key_id, "revoked_at": now,
                                                            "reason": "admin_revoke"},
                                    session_id=SYSTEM_SESSION_ID, actor=Actor.SYSTEM))
    Terminal.open().out.print(f"user {user_id} disabled; {len(revoked)} key(s) revoked", markup=False)


@app.command("export")
@guarded
def export(
    user_id: UserArgument,
    out: Annotated[Path | None, typer.Option("--out", help="File to write (default: standard output).")] = None,
) -> None:
    """Everything the record holds about a user, as JSON: registry entry, keys, the sessions of their
    gateway calls with messages and events, and the audit events naming them."""
    from metis_core.users import export_user

    user_id = _checked(user_id)
    with _stores() as (users, keys), session_store() as sessions, trace_store() as trace:
        document = export_user(user_id, users=users, keys=keys, sessions=sessions, trace=trace)
    if out is None:
        sys.stdout.buffer.write(document + b"\n")
        return
    try:
        out.write_bytes(document + b"\n")
    except OSError as error:
        raise UsageProblem(f"cannot write {out}: {error.strerror or error}; check the path and permissions") from None
    Terminal.open().err.print(f"exported {user_id} to {out}", style="dim", markup=False)


@app.command("forget")
@guarded
def forget(
    user_id: UserArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Forget without asking.")] = False,
) -> None:
    """Erase a user's content for good: the sessions of their gateway calls (messages and non-audit
    events), their name and e-mail; their keys are revoked. Audit facts naming only the id stay."""
    from metis_core.users import forget_user

    user_id = _checked(user_id)
    terminal = Terminal.open()
    if not terminal.confirmed(f"erase everything recorded about {user_id}? This cannot be undone", yes=yes,
                              act=f"forgetting {user_id}"):
        return
    with _stores() as (users, keys), session_store() as sessions, trace_store() as trace:
        result = forget_user(user_id, users=users, keys=keys, sessions=sessions, trace=trace)
    terminal.out.print(f"forgot {user_id}: {result.sessions_deleted} session(s), {result.messages_deleted} "
                       f"message(s), {result.events_deleted} trace event(s) erased; {result.keys_revoked} key(s) "
                       f"revoked; {result.audit_events_kept} audit event(s) kept", markup=False)
