"""`metis cost`: spend per session, per model and per day, from the stored messages.

Sums each model call's own priced usage (spend.py); unpriced calls are counted and flagged.
`--since` limits the window, `--session` to one session, `--json` prints the three groupings,
`--by` one grouping, including the gateway's key, user and team. Piped (or `--plain`), one tab-separated
line per row, the grouping first.
`--reprice` shows the same calls priced with today's table beside what was stored (cost_reprice.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.local_data import parse_when, session_store
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import Rows, cost_text
from metis_core.cli.session_ids import resolve_session_id
from metis_core.cli.spend import Answer, SpendRow, spend_by, stored_answers, stored_calls, total

if TYPE_CHECKING:  # loaded messages only for --reprice: the grouping reads the stored rows
    from metis_core.messages import Message


@guarded
def cost(
    session_id: Annotated[str | None, typer.Option(
        "--session", help="Only this session (id, prefix or `latest`).")] = None,
    since: Annotated[str | None, typer.Option(
        help="Only calls since this date/time (UTC) or age: 2026-05-01, 7d, 12h.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document for scripts.")] = False,
    by: Annotated[str | None, typer.Option("--by", help="One grouping: session, model, provider, day, or (gateway "
                                                       "traffic) key, user, team.")] = None,
    reprice: Annotated[bool, typer.Option("--reprice", help="Price the stored calls with today's price table "
                                                           "beside what was recorded; changes nothing.")] = False,
    plain: PlainOption = False,
) -> None:
    """What the model calls cost, grouped by session, model and day (or one --by grouping)."""
    terminal = Terminal.open()
    start = parse_when(since, "--since")
    with session_store() as store:
        if session_id is not None:
            session_id = resolve_session_id(store, session_id)  # a prefix or `latest` works too
        if reprice:
            _show_repricing(terminal, stored_calls(store, session_id=session_id, since=start), as_json)
            return
        calls = stored_answers(store, session_id=session_id, since=start)  # rows, not messages: no model to load
    keys: dict[str, Callable[[Answer], str]] = {
        "session": lambda a: a.session_id,
        "model": lambda a: a.model or "?",
        "provider": lambda a: a.metadata.get("provider") or (a.model or "?").partition(":")[0],
        "day": lambda a: a.created_at.strftime("%Y-%m-%d"),
        "key": lambda a: a.field("gateway_key_id"),
        "user": lambda a: a.field("user_id"),
        "team": lambda a: a.field("team_id"),
    }
    if by is not None and by not in keys:
        raise UsageProblem(f"--by takes one of {', '.join(keys)}, not {by!r}")
    chosen = [by] if by is not None else ["session", "model", "day"]
    groupings = {name: spend_by(calls, keys[name]) for name in chosen}
    whole = total(next(iter(groupings.values())))
    if as_json:
        document = {name: [row.to_json() for row in rows] for name, rows in groupings.items()}
        document["total"] = whole.to_json()  # type: ignore[assignment]
        terminal.raw(json.dumps(document, indent=2) + "\n")
        return
    if not calls:
        terminal.out.print("no model calls recorded yet", markup=False)
        return
    if plain or not terminal.out_is_terminal:
        terminal.raw(_spend_lines(groupings, whole).plain())
        return
    from metis_core.cli.tables import spend_table  # rich tables: only for a person at a terminal

    for name, rows in groupings.items():
        terminal.out.print(spend_table(f"by {name}", name, rows, whole), soft_wrap=False)


def _spend_lines(groupings: dict[str, list[SpendRow]], whole: SpendRow) -> Rows:
    """Every grouping's rows for other programs, the grouping first (`session`, `model`, ...), then
    the total with an empty key: `metis cost | grep ^model` picks one grouping."""
    lines = Rows(("by", "key", "calls", "tokens in", "tokens out", "cost"))
    for name, rows in [*groupings.items(), ("total", [whole])]:
        lines.rows += [(name, "" if row is whole else row.key, str(row.calls), str(row.input_tokens),
                        str(row.output_tokens), cost_text(row.cost_usd, row.unpriced_calls)) for row in rows]
    return lines


def _show_repricing(terminal: Terminal, calls: list[Message], as_json: bool) -> None:
    from metis_core.cli.cost_reprice import show_repricing
    from metis_core.cli.runtime_setup import load_cli_config
    from metis_core.models.pricing import PriceTable

    show_repricing(terminal, calls, PriceTable.load(load_cli_config()), as_json=as_json)
