"""`metis feedback`, `metis eval run`, `metis patterns list|show|clear`: the learning loop from the shell.

Each opens the runtime with the learning layer attached (docs/learning.md) and calls it; nothing
here scores, fingerprints or routes by itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer
from rich.table import Table

from metis_core.agent.runtime import Runtime
from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.output import Terminal
from metis_core.cli.runtime_setup import load_cli_config, open_runtime
from metis_core.cli.session_ids import resolve_session_id

eval_app = typer.Typer(help="Score turns and sessions with the evaluator.", no_args_is_help=True)
patterns_app = typer.Typer(help="What the pattern store has learned, and forgetting it.", no_args_is_help=True)
AGE = re.compile(r"^(\d+)([dhm])$")


@contextmanager
def learning_runtime() -> Iterator[tuple[Runtime, Any]]:
    runtime = open_runtime(load_cli_config())
    try:
        if runtime.learning is None:
            raise UsageProblem("learning is off in config.yaml (learning.enabled: false)")
        yield runtime, runtime.learning
    finally:
        runtime.close()


def parse_since(value: str | None) -> datetime | None:
    """`7d`, `12h`, `30m` or an ISO date/time (UTC when no zone is given)."""
    if value is None:
        return None
    match = AGE.match(value.strip())
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        unit_name = {"d": "days", "h": "hours", "m": "minutes"}[unit]
        return datetime.now(UTC) - timedelta(**{unit_name: amount})
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageProblem(f"--since {value!r} is neither an age (7d, 12h, 30m) nor an ISO date") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@guarded
def feedback(
    session: Annotated[str, typer.Argument(help="The session: an id, a unique prefix of one, or `latest`.")],
    target: Annotated[str, typer.Argument(help="TURN (id or 1-based number) then up|down; or just up|down to "
                                               "rate the whole session.")],
    rating: Annotated[str | None, typer.Argument(help="up or down, when a TURN is given.")] = None,
    comment: Annotated[str | None, typer.Option("--comment", "-c", help="Say why.")] = None,
) -> None:
    """Rate a turn or a whole session (feedback.explicit); the evaluator re-scores it."""
    terminal = Terminal.open()
    turn, value = (None, target) if rating is None else (target, rating)
    with learning_runtime() as (runtime, learning):
        session = resolve_session_id(runtime.store, session)
        event = learning.feedback.rate(session, value, turn=turn, scope="session" if turn is None else "turn",
                                       comment=comment)
        learning.settle()  # its verdict and the pattern outcomes it rescores land before the process ends
    what = f"turn {event.payload['subject_turn_id']}" if turn is not None else f"session {session}"
    terminal.out.print(f"recorded {event.payload['rating']} for {what}", markup=False)


@eval_app.command("run")
@guarded
def eval_run(
    since: Annotated[str | None, typer.Option(help="Only subjects finished since: 7d, 12h, 30m or an ISO "
                                                   "date.")] = None,
    again: Annotated[bool, typer.Option("--again", help="Re-score subjects that already have a verdict.")] = False,
) -> None:
    """Score finished turns and sessions that have no verdict yet (verdicts are append-only)."""
    terminal = Terminal.open()
    moment = parse_since(since)
    with learning_runtime() as (runtime, learning):
        started = datetime.now(UTC)
        results = learning.triggers.run_batch(moment, again=again)
        runtime.bus.flush()
        failures = runtime.trace.events(types=("eval.failed",), since=started) if None in results else []
    scored = [r for r in results if r is not None]
    failed = len(results) - len(scored)
    mean = sum(r.score for r in scored) / len(scored) if scored else None
    terminal.out.print(f"evaluated {len(results)} subject(s): {len(scored)} verdict(s), {failed} failed"
                       + (f" · mean score {mean:.2f}" if mean is not None else ""), markup=False)
    _say_why(terminal, failures)


def _say_why(terminal: Terminal, failures: list[Any]) -> None:
    """One line per failure mode: how many, and the first one's message (eval.failed's)."""
    modes: dict[str, list[str]] = {}
    for event in failures:
        modes.setdefault(str(event.payload["failure_mode"]), []).append(str(event.payload["error_message"]))
    for mode, messages in modes.items():
        terminal.warn(f"{len(messages)} failed with {mode}: {messages[0]}")


@patterns_app.command("list")
@guarded
def patterns_list(limit: Annotated[int, typer.Option(min=1, help="How many fingerprints.")] = 30) -> None:
    """Fingerprints most recently seen, with the models tried on them and how they did."""
    terminal = Terminal.open()
    with learning_runtime() as (_, learning):
        stored = learning.patterns.fingerprints(limit)
        outcomes = learning.patterns.outcomes([f.id for f in stored])
        fingerprints, total = learning.patterns.counts()
    table = Table("fingerprint", "kind", "features", "models (mean score · n)")
    for fp in stored:
        mine = [o for o in outcomes if o.fingerprint_id == fp.id]
        table.add_row(fp.id, fp.fingerprint.kind, _features(fp.fingerprint.features), _models(mine))
    terminal.out.print(table, soft_wrap=False)
    terminal.out.print(f"{fingerprints} fingerprint(s), {total} outcome(s)", style="dim", markup=False)


@patterns_app.command("show")
@guarded
def patterns_show(fingerprint_id: Annotated[str, typer.Argument(help="A fingerprint id (patterns list).")]) -> None:
    """One fingerprint: its features and every outcome recorded for it."""
    terminal = Terminal.open()
    with learning_runtime() as (_, learning):
        fp = learning.patterns.get(fingerprint_id)
        if fp is None:
            raise UsageProblem(f"no fingerprint {fingerprint_id}; `metis patterns list` shows them")
        outcomes = learning.patterns.outcomes([fingerprint_id])
    terminal.out.print(f"fingerprint {fp.id} ({fp.fingerprint.kind})", style="bold", markup=False)
    terminal.out.print(_features(fp.fingerprint.features), markup=False)
    table = Table("model", "score", "cost", "latency")
    for o in outcomes:
        table.add_row(o.model, "-" if o.score is None else f"{o.score:.2f}", f"${o.cost_usd}", f"{o.latency_ms} ms")
    terminal.out.print(table, soft_wrap=False)


@patterns_app.command("clear")
@guarded
def patterns_clear(yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False) -> None:
    """Forget everything the pattern store learned (pattern.evicted, trigger manual_clear)."""
    terminal = Terminal.open()
    if not yes and not typer.confirm("forget every learned pattern?", default=False):
        terminal.out.print("nothing cleared", markup=False)
        return
    with learning_runtime() as (_, learning):
        event = learning.clear_patterns()
    evicted = event.payload["entries_evicted"] if event is not None else 0
    terminal.out.print(f"cleared {evicted} outcome(s)", markup=False)


def _features(features: dict[str, Any]) -> str:
    return " ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in features.items())


def _models(outcomes: list[Any]) -> str:
    per: dict[str, list[float]] = {}
    for o in outcomes:
        if o.score is not None:
            per.setdefault(o.model, []).append(o.score)
    return "; ".join(f"{m} {sum(s) / len(s):.2f} · {len(s)}" for m, s in sorted(per.items())) or "-"
