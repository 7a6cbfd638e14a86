"""`metis gateway serve` and `metis gateway keys issue|list|revoke|rotate`, `metis gateway limits set`.

Key commands work on METIS_HOME/metis.db directly (no server needed) and put their audit events
on a bus whose trace writer is the same file. `issue` and `rotate` print the token once; nothing
else ever shows more than its prefix. Gateway modules are imported inside the commands, so
`metis --help` does not pay for them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Annotated

import typer

from metis_core.cli.failures import guarded
from metis_core.cli.local_data import database, parse_when
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.errors import GatewayKeyError, ServeError

if TYPE_CHECKING:
    from metis_core.gateway.keys import KeyService
    from metis_core.store.gateway_keys import BudgetUsage, GatewayKeyRecord

app = typer.Typer(help="Serve OpenAI- and Anthropic-compatible endpoints; manage their keys.", no_args_is_help=True)
keys_app = typer.Typer(help="Issue, list, revoke and rotate gateway keys.", no_args_is_help=True)
limits_app = typer.Typer(help="Budgets and rates of a user or team.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(limits_app, name="limits")

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse_duration(value: str, option: str) -> timedelta:
    match = _DURATION.match(value.strip())
    if match is None:
        raise GatewayKeyError(f"{option} takes a duration like 30m, 24h or 7d, not {value!r}")
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def parse_usd(value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise GatewayKeyError(f"--budget-usd takes an amount like 25 or 2.50, not {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise GatewayKeyError("--budget-usd must be a finite amount of zero or more")
    return amount


@contextmanager
def key_service() -> Iterator[KeyService]:
    """Keys on the configured database (METIS_HOME/metis.db or PostgreSQL), audit events to its trace."""
    from metis_core.events.bus import EventBus
    from metis_core.gateway.keys import KeyService
    from metis_core.store.backend import SharedDatabase
    from metis_core.store.gateway_keys import open_gateway_key_store
    from metis_core.trace.store import TraceStore

    shared = SharedDatabase(database())  # one pool for both stores on PostgreSQL
    bus = EventBus()
    try:
        trace = TraceStore(shared)
        trace.attach(bus)
        store = open_gateway_key_store(shared)
    finally:
        shared.close()  # the stores hold their own leases; the pool closes with the last of them
    try:
        yield KeyService(store, bus)
    finally:
        bus.shutdown(drain=True)
        trace.close()
        store.close()


def _key_id(keys: KeyService, text: str) -> str:
    """A key id as typed: whole, a unique prefix (`gk_` optional) or `latest` (the newest key)."""
    from metis_core.cli.session_ids import pick_id

    newest = sorted(keys.list(), key=lambda record: record.created_at, reverse=True)
    return pick_id(text, [record.id for record in newest], id_prefix="gk_", what="gateway key",
                   hint="`metis gateway keys list` shows them")


def _row(record: GatewayKeyRecord, now: datetime, usage: BudgetUsage | None = None) -> dict[str, object]:
    if record.revoked_at is not None:
        status = f"revoked ({record.revoke_reason})"
    elif record.grace_until is not None:
        status = "grace until " + record.grace_until.isoformat(timespec="seconds") if now < record.grace_until \
            else "grace over"
    elif record.expires_at is not None and now >= record.expires_at:
        status = "expired"
    else:
        status = "active"
    return {
        "id": record.id, "name": record.name, "scope": record.scope, "prefix": record.prefix, "user_id": record.user_id,
        "team_id": record.team_id, "models": list(record.allowed_models) if record.allowed_models else None,
        "budget_usd": format(record.budget_usd, "f") if record.budget_usd is not None else None,
        "budget_period": record.budget_period, "rpm": record.rpm, "tpm": record.tpm, "status": status,
        # the budget's current window (docs/gateway.md "Budgets and reservations"); None without a budget
        **(usage.as_json() if usage is not None else {"spent_usd": None, "reserved_usd": None, "remaining_usd": None}),
    }  # fmt: skip


def _print_issued(terminal: Terminal, record: GatewayKeyRecord, token: str, as_json: bool) -> None:
    if as_json:
        terminal.raw(json.dumps({"id": record.id, "prefix": record.prefix, "scope": record.scope, "key": token}) + "\n")
        return
    terminal.out.print(f"key id  {record.id}", markup=False)
    terminal.out.print(f"scope   {record.scope}", markup=False)
    terminal.out.print(f"key     {token}", markup=False)
    terminal.out.print("This key is shown once; only its hash is stored. Send it as `Authorization: Bearer` "
                       "or `x-api-key`.", markup=False)


# --- serve -----------------------------------------------------------------------------------


@app.command("serve")
@guarded
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 4000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (they share metis.db).")] = 1,
    web: Annotated[bool, typer.Option("--web", help="Also serve `metis serve`'s web view, JSON API, HTTP chat "
                                                    "and event WebSocket (one worker; docs/serve.md).")] = False,
    allowed_host: Annotated[list[str] | None, typer.Option(
        "--allowed-host", help="A Host name to answer to besides loopback and the bound address (repeatable; "
                               "also config `serve.allowed_hosts`).")] = None,
    allowed_origin: Annotated[list[str] | None, typer.Option(
        "--allowed-origin", help="An origin whose pages may send writes (repeatable; config `serve.allowed_origins`).")
    ] = None,
    metrics: Annotated[bool, typer.Option("--metrics", help="Serve Prometheus metrics at /metrics (admin key or "
                                                            "METIS_METRICS_BEARER; also METIS_METRICS=1).")] = False,
) -> None:
    """Serve /v1/chat/completions, /v1/messages, /v1/models, /healthz and /readyz."""
    import os

    from metis_core.cli.listening import require_extra, run_until_stopped
    from metis_core.cli.runtime_setup import load_cli_config

    require_extra("gateway", "metis gateway serve")
    from metis_core.gateway.serve import server_stack
    from metis_core.gateway.web_guard import ALLOWED_HOSTS_ENV, ALLOWED_ORIGINS_ENV

    if metrics:  # the workers read it from the environment
        from metis_core.gateway.metrics import METRICS_ENV

        os.environ[METRICS_ENV] = "1"
    names = load_cli_config().serve  # the workers read the names from the environment
    os.environ[ALLOWED_HOSTS_ENV] = ",".join([*names.allowed_hosts, *(allowed_host or [])])
    os.environ[ALLOWED_ORIGINS_ENV] = ",".join([*names.allowed_origins, *(allowed_origin or [])])

    factory = "metis_core.gateway.serve:build_app"
    if web:
        from metis_core.gateway.key_check import KeyCheck
        from metis_core.server.access import ServerAccess
        from metis_core.server.gateway_mount import BIND_HOST_ENV, BIND_PORT_ENV, FACTORY

        if workers != 1:
            raise ServeError("--web needs --workers 1: a live event stream must run beside the bus it "
                                  "follows; serve the web view from one worker")
        with key_service() as keys:  # refuse an open bind without an admin or viewer key before starting
            ServerAccess.for_bind(host, KeyCheck(keys))
        os.environ[BIND_HOST_ENV] = host
        os.environ[BIND_PORT_ENV] = str(port)
        factory = FACTORY
    terminal = Terminal.open()
    loop, http = server_stack()
    run_until_stopped(factory, host=host, port=port, factory=True, workers=workers, loop=loop, http=http,
                      log_level="warning", lifespan="on", access_log=False,
                      announce=lambda: terminal.err.print(f"metis gateway on http://{host}:{port} ({workers} worker(s)"
                                                          f"{', web view at /' if web else ''}); Ctrl-C stops it",
                                                          markup=False))


# --- keys ------------------------------------------------------------------------------------

ModelsOption = Annotated[list[str] | None, typer.Option("--models", help="Allowed model ids, aliases or glob "
                                                                         "patterns (repeatable); default all.")]


@keys_app.command("issue")
@guarded
def issue(
    name: Annotated[str, typer.Option(help="A label for the key (not a person's name).")] = "key",
    user: Annotated[str | None, typer.Option(help="usr_<ulid>, or `new` to mint one.")] = None,
    team: Annotated[str | None, typer.Option(help="team_<ulid>, or `new` to mint one.")] = None,
    models: ModelsOption = None,
    budget_usd: Annotated[str | None, typer.Option("--budget-usd", help="Spend cap in USD.")] = None,
    budget_period: Annotated[str, typer.Option("--budget-period", help="day, month or total.")] = "month",
    rpm: Annotated[int | None, typer.Option(min=1, help="Requests per minute.")] = None,
    tpm: Annotated[int | None, typer.Option(min=1, help="Tokens per minute.")] = None,
    expires: Annotated[str | None, typer.Option(help="Expiry: a date/time (UTC) or a duration like 30d.")] = None,
    scope: Annotated[str, typer.Option(help="model: call models (the default); viewer: read `metis serve`; "
                                            "admin: both, and private content, chat and keys on `metis serve`.")]
    = "model",
    as_json: Annotated[bool, typer.Option("--json", help="Print {id, prefix, scope, key} as JSON.")] = False,
) -> None:
    """Issue a key; it is printed once and stored only as a hash."""
    from metis_core.gateway.keys import KeyTerms, check_subject_id

    if budget_period not in ("day", "month", "total"):
        raise GatewayKeyError("--budget-period is day, month or total")
    expires_at = None
    if expires is not None:
        expires_at = datetime.now(UTC) + parse_duration(expires, "--expires") if _DURATION.match(expires) \
            else parse_when(expires, "--expires")
    terms = KeyTerms(
        name=name, user_id=check_subject_id(user, "user"), team_id=check_subject_id(team, "team"),
        allowed_models=list(models) if models else None, budget_usd=parse_usd(budget_usd),
        budget_period=budget_period if budget_usd is not None else None,  # type: ignore[arg-type]
        rpm=rpm, tpm=tpm, expires_at=expires_at, scope=scope,  # type: ignore[arg-type]
    )  # fmt: skip
    with key_service() as keys:
        issued = keys.issue(terms)
    _print_issued(Terminal.open(), issued.record, issued.token, as_json)


@keys_app.command("list")
@guarded
def list_keys(as_json: Annotated[bool, typer.Option("--json", help="One JSON document.")] = False,
              plain: PlainOption = False) -> None:
    """Every key with its prefix, owner, limits and status (never the key itself)."""
    from metis_core.cli.rows import Rows, print_rows
    from metis_core.store.gateway_keys import open_gateway_key_store

    terminal = Terminal.open()
    now = datetime.now(UTC)
    from metis_core.store.gateway_keys import budget_usage

    store = open_gateway_key_store(database())  # only reads: no event bus, no trace writer
    try:
        rows = [_row(record, now, budget_usage(store, "gateway_key", record.id, record.budget_usd,
                                               record.budget_period, now)) for record in store.list_keys()]
    finally:
        store.close()
    if as_json:
        terminal.raw(json.dumps(rows, indent=2) + "\n")
        return
    if not rows:
        terminal.out.print("no gateway keys yet: `metis gateway keys issue`", markup=False)
        return
    table = Rows(("id", "name", "scope", "prefix", "user", "team", "models", "budget", "rpm", "tpm", "status"))
    for row in rows:
        budget = (f"${row['budget_usd']}/{row['budget_period']}: ${row['spent_usd']} spent, ${row['reserved_usd']} "
                  f"held, ${row['remaining_usd']} left") if row["budget_usd"] is not None else "-"
        models = ", ".join(row["models"]) if isinstance(row["models"], list) else "all"
        table.rows.append(tuple(str(v) if v is not None else "-" for v in (
            row["id"], row["name"], row["scope"], row["prefix"], row["user_id"], row["team_id"], models, budget,
            row["rpm"], row["tpm"], row["status"])))  # fmt: skip
    print_rows(terminal, table, plain=plain)


@keys_app.command("revoke")
@guarded
def revoke(key_id: Annotated[str, typer.Argument(help="The key id (gk_...), a unique prefix or `latest`.")]
           ) -> None:
    """Revoke a key at once."""
    with key_service() as keys:
        key_id = _key_id(keys, key_id)
        keys.revoke(key_id)
    Terminal.open().out.print(f"revoked {key_id}", markup=False)


@keys_app.command("rotate")
@guarded
def rotate(
    key_id: Annotated[str, typer.Argument(help="The key id (gk_...), a unique prefix or `latest`.")],
    grace: Annotated[str, typer.Option(help="How long the old key keeps working, e.g. 24h; 0s ends it now.")] = "24h",
    as_json: Annotated[bool, typer.Option("--json", help="Print {id, prefix, key} as JSON.")] = False,
) -> None:
    """Replace a key with a new one on the same terms; the old one works until the grace ends."""
    how_long = parse_duration(grace, "--grace")  # a bad option is named before the key is looked up
    with key_service() as keys:
        issued = keys.rotate(_key_id(keys, key_id), grace=how_long)
    _print_issued(Terminal.open(), issued.record, issued.token, as_json)


# --- user and team limits --------------------------------------------------------------------


@limits_app.command("set")
@guarded
def set_limits(
    subject_id: Annotated[str, typer.Argument(help="usr_<ulid> or team_<ulid>.")],
    budget_usd: Annotated[str | None, typer.Option("--budget-usd", help="Spend cap in USD.")] = None,
    budget_period: Annotated[str, typer.Option("--budget-period", help="day, month or total.")] = "month",
    rpm: Annotated[int | None, typer.Option(min=1, help="Requests per minute.")] = None,
    tpm: Annotated[int | None, typer.Option(min=1, help="Tokens per minute.")] = None,
) -> None:
    """Set (replace) the budget and rates shared by every key of a user or team."""
    from metis_core.gateway.keys import check_subject_id
    from metis_core.store.gateway_keys import SubjectLimits, open_gateway_key_store

    kind = "user" if subject_id.startswith("usr_") else "team"
    check_subject_id(subject_id, kind)
    if budget_period not in ("day", "month", "total"):
        raise GatewayKeyError("--budget-period is day, month or total")
    amount = parse_usd(budget_usd)
    store = open_gateway_key_store(database())
    try:
        store.set_limits(SubjectLimits(kind, subject_id, amount,  # type: ignore[arg-type]
                                       budget_period if amount is not None else None, rpm, tpm))  # type: ignore[arg-type]
    finally:
        store.close()
    Terminal.open().out.print(f"limits of {subject_id} set", markup=False)
