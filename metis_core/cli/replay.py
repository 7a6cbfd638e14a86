"""`metis replay SESSION --model M` and `metis replay --sessions QUERY --model M`: compare a model on past work.

Opens the runtime like `metis run`, hands the work to metis_core.replay, and prints a rich table
per session (tools side by side, similarity, tokens, cost, latency, first divergence) or, with
--json, one JSON document. Exit code 0 whether or not turns diverged: divergence is the finding.
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from metis_core.agent.confirmation import deny_all
from metis_core.cli.failures import guarded
from metis_core.cli.output import Terminal
from metis_core.cli.render import format_usd
from metis_core.cli.runtime_setup import load_cli_config, open_runtime, require_a_key_for
from metis_core.cli.session_ids import resolve_session_id
from metis_core.errors import ReplayError

if TYPE_CHECKING:
    from metis_core.replay.batch import BatchReport
    from metis_core.replay.session_replay import ReplayReport
    from metis_core.replay.source import ToolCall, TurnSide

DEFAULT_TEXT_THRESHOLD = 0.8
"""metis_core.replay.compare.DEFAULT_TEXT_THRESHOLD, repeated so `metis --help` imports no replay code."""


def parse_turns(text: str | None) -> tuple[int, int | None] | None:
    """`3`, `2..4`, `2..` (to the last turn, None) or `..4`; None for all turns."""
    if text is None:
        return None
    first, sep, last = text.partition("..")
    try:
        start = int(first) if first else 1
        end = int(last) if last else (None if sep else start)
    except ValueError:
        raise ReplayError(f"--turns {text!r} is not N, N..M, N.. or ..M (1-based user turns)") from None
    if start < 1 or (end is not None and end < start):
        raise ReplayError(f"--turns {text!r} must count from 1 upwards, e.g. 2..4")
    return start, end


def _call(call: ToolCall) -> str:
    arguments = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    return f"{call.name}({arguments})"


def _tools(calls: list[ToolCall]) -> str:
    return "\n".join(_call(c) for c in calls) or "-"


def _pair(original: Any, replay: Any) -> str:
    return f"{original} → {replay}"


def _tokens(side: TurnSide) -> int:
    return side.input_tokens + side.output_tokens


def _similarity(replay: TurnSide, similarity: float) -> str:
    if replay.structured_valid is None:
        return f"{similarity:.2f}"
    return f"{similarity:.2f}\nJSON {'valid' if replay.structured_valid else 'INVALID'}"


def turn_table(report: ReplayReport) -> Table:
    table = Table(title=f"{report.source_session_id} replayed on {report.model} → {report.replay_session_id}",
                  title_justify="left", show_lines=True)
    columns = ("turn", "original tools", "replay tools", "text sim.", "tokens", "cost", "latency ms",
               "first divergence")
    for name in columns:
        table.add_column(name, overflow="fold")
    for t in report.turns:
        first = t.first
        table.add_row(
            str(t.index), _tools(t.original.tool_calls), _tools(t.replay.tool_calls),
            _similarity(t.replay, t.similarity),
            _pair(_tokens(t.original), _tokens(t.replay)),
            _pair(_cost(t.original.cost_usd), _cost(t.replay.cost_usd)),
            _pair(t.original.latency_ms, t.replay.latency_ms),
            f"[red]{first.point} @ call {first.step}[/red]: {first.detail}" if first else "[green]none[/green]",
        )
    return table


def _summary_line(summary: dict[str, Any]) -> str:
    cost = f"cost {_cost(_decimal(summary['original_cost_usd']))} → {_cost(_decimal(summary['replay_cost_usd']))}"
    return (f"{summary['diverged_turns']} of {summary['turns']} turn(s) diverged "
            f"({summary['divergence_rate']:.0%}) · {cost}")


def _decimal(value: str | None) -> Decimal | None:
    return Decimal(value) if value is not None else None


def _cost(amount: Decimal | None) -> str:
    """A side's cost; None is a turn with a call nobody priced, never shown as `$0` or `-`."""
    return "cost unknown" if amount is None else format_usd(amount)


def batch_table(batch: BatchReport) -> Table:
    table = Table(title=f"sessions matching {batch.query!r} replayed on {batch.model}", title_justify="left")
    for name in ("session", "replay session", "turns", "diverged", "tool-call div.", "text div.", "cost"):
        table.add_column(name, overflow="fold")
    for report in batch.reports:
        s = report.summary()
        table.add_row(report.source_session_id, report.replay_session_id, str(s["turns"]), str(s["diverged_turns"]),
                      str(s["tool_call_divergences"]), str(s["text_divergences"]),
                      _pair(_cost(_decimal(s["original_cost_usd"])), _cost(_decimal(s["replay_cost_usd"]))))
    return table


@guarded
def replay(
    session: Annotated[str | None, typer.Argument(
        help="The stored session to replay: an id, a unique prefix of one, or `latest`.")] = None,
    model: Annotated[str, typer.Option("--model", "-m", help="The model to replay on (id, alias or chain).")] = "",
    turns: Annotated[str | None, typer.Option("--turns", help="Only these user turns: N, N..M, N.. or ..M.")] = None,
    sessions: Annotated[str | None, typer.Option(
        "--sessions", help="Replay every session matching: workspace:PATH since:DATE until:DATE tag:NAME "
                           "limit:N replays:include|only and words (replay sessions are left out "
                           "unless replays: asks).")] = None,
    live_tools: Annotated[bool, typer.Option("--live-tools", help="Run tools again instead of serving the "
                                                                   "recorded results.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every tool confirmation (--live-tools).")] = False,
    threshold: Annotated[float, typer.Option("--text-threshold", min=0.0, max=1.0, help="Answer similarity "
                                             "below which texts diverge.")] = DEFAULT_TEXT_THRESHOLD,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document for scripts.")] = False,
) -> None:
    """Re-run a session's turns on another model and show, per turn, where the two differ."""
    if not model:
        raise typer.BadParameter("name the model to replay on", param_hint="--model")
    if (session is None) == (sessions is None):
        raise typer.BadParameter("give a SESSION or --sessions QUERY (one of them)", param_hint="SESSION")
    if sessions is not None and turns is not None:
        raise typer.BadParameter("--turns applies to one SESSION, not to --sessions", param_hint="--turns")
    from metis_core.replay.batch import replay_sessions
    from metis_core.replay.session_replay import replay_session

    config = load_cli_config()
    terminal = Terminal.open(config)
    runtime = open_runtime(config, confirmer=deny_all, approve_everything=yes)
    try:
        require_a_key_for(runtime, model)
        with asyncio.Runner() as runner:
            if session is not None:
                session = resolve_session_id(runtime.store, session)
                report = runner.run(replay_session(runtime, session, model, turns=parse_turns(turns),
                                                   live_tools=live_tools, text_threshold=threshold))
                document: dict[str, Any] = report.to_json()
            else:
                assert sessions is not None
                batch = runner.run(replay_sessions(runtime, sessions, model, live_tools=live_tools,
                                                   text_threshold=threshold))
                document = batch.to_json()
    finally:
        runtime.close()
    if as_json:
        terminal.raw(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        return
    if session is not None:
        terminal.out.print(turn_table(report))
        for t in report.turns:  # what the record did not hold of the original's request
            for why in t.request.lacking:
                terminal.warn(f"turn {t.index}: {why}")
    else:
        terminal.out.print(batch_table(batch))
        for sid, why in batch.skipped:
            terminal.warn(f"skipped {sid}: {why}")
    terminal.out.print(_summary_line(document["summary"]), markup=False)

