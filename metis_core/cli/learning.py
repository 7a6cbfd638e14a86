"""`metis feedback`, `metis eval run`, `metis patterns list|show|clear`: the learning loop from the shell.

Each opens the runtime with the learning layer attached (docs/learning.md) and calls it, except
`patterns list|show`, which only read the pattern store; nothing here scores, fingerprints or routes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer

from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import Rows, print_rows
from metis_core.cli.runtime_setup import load_cli_config, open_runtime
from metis_core.cli.session_ids import resolve_session_id

if TYPE_CHECKING:  # the agent loads for commands that run the learning loop, not to read the pattern store
    from metis_core.agent.runtime import Runtime
    from metis_core.learning.patterns.store import PatternStore

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


@contextmanager
def pattern_store() -> Iterator[PatternStore]:
    """The pattern store on its own, for reading it: no Runtime, no bus, no learning loop."""
    from metis_core.cli.local_data import database
    from metis_core.learning.database import LearningDatabase
    from metis_core.learning.patterns.store import PatternStore
    from metis_core.learning.settings import LearningSettings

    settings = LearningSettings.from_config(load_cli_config().learning)
    if not settings.enabled:
        raise UsageProblem("learning is off in config.yaml (learning.enabled: false)")
    db = LearningDatabase(database())
    try:
        yield PatternStore(db, settings.patterns)
    finally:
        db.close()


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
def patterns_list(limit: Annotated[int, typer.Option(min=1, help="How many fingerprints.")] = 30,
                  plain: PlainOption = False) -> None:
    """Fingerprints most recently seen, with the models tried on them and how they did (plain
    tab-separated rows when piped; on a terminal a table and the store's totals)."""
    terminal = Terminal.open()
    with pattern_store() as patterns:
        stored = patterns.fingerprints(limit)
        outcomes = patterns.outcomes([f.id for f in stored])
        fingerprints, total = patterns.counts()
    rows = Rows(("fingerprint", "kind", "features", "models (mean score · n)"))
    for fp in stored:
        mine = [o for o in outcomes if o.fingerprint_id == fp.id]
        rows.rows.append((fp.id, fp.fingerprint.kind, _features(fp.fingerprint.features), _models(mine)))
    print_rows(terminal, rows, plain=plain)
    if not plain and terminal.out_is_terminal:
        terminal.out.print(f"{fingerprints} fingerprint(s), {total} outcome(s)", style="dim", markup=False)


@patterns_app.command("show")
@guarded
def patterns_show(fingerprint_id: Annotated[str, typer.Argument(help="A fingerprint id (patterns list).")]) -> None:
    """One fingerprint: its features and every outcome recorded for it."""
    from rich.table import Table

    terminal = Terminal.open()
    with pattern_store() as patterns:
        fp = patterns.get(fingerprint_id)
        if fp is None:
            raise UsageProblem(f"no fingerprint {fingerprint_id}; `metis patterns list` shows them")
        outcomes = patterns.outcomes([fingerprint_id])
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


@patterns_app.command("explain")
@guarded
def patterns_explain(
    turn: Annotated[str, typer.Argument(help="A turn id, a unique prefix of one, or `latest`.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document for scripts.")] = False,
) -> None:
    """Why a turn went to its model: the routing chain, the pattern, its evidence and posterior."""
    from rich.table import Table

    from metis_core.cli.session_ids import pick_id
    from metis_core.learning.patterns.explain import explain_turn, routed_turns

    terminal = Terminal.open()
    with learning_runtime() as (_, learning):
        turn_id = pick_id(turn, routed_turns(learning), id_prefix="", what="routed turn",
                          hint="`metis trace show SESSION` lists a session's turns")
        found = explain_turn(learning, turn_id)
    if found is None:
        raise UsageProblem(f"no routing decision recorded for turn {turn_id}")
    if as_json:
        terminal.out.print_json(json.dumps(found.to_json()))
        return
    what = "exploration" if found.exploration else "routing"
    terminal.out.print(f"turn {found.turn_id} (session {found.session_id}) → {found.chosen_model} by {what}",
                       style="bold", markup=False)
    chain = Table("policy", "verdict", "model", "reason")
    for v in found.chain:
        chain.add_row(v["policy"], v["verdict"] + (" (exploration)" if v.get("exploration") else ""),
                      v.get("candidate_model") or "-", v["reason"])
    terminal.out.print(chain, soft_wrap=False)
    if found.fingerprint_id is None:
        terminal.out.print("no pattern: the turn was not recorded and the pattern slot matched nothing",
                           markup=False)
        return
    terminal.out.print(f"pattern {found.fingerprint_id}: {_features(found.features or {})} "
                       f"({found.neighbours} neighbouring fingerprint(s))", markup=False)
    table = Table("model", "outcomes (learned)", "evidence", "posterior Beta(α, β)", "mean [90 %]", "mean cost")
    for p in found.posteriors:
        table.add_row(p.model, f"{p.outcomes} ({p.learned})", f"{p.evidence:.2f}", f"Beta({p.alpha:.2f}, {p.beta:.2f})",
                      f"{p.mean:.2f} [{p.interval[0]:.2f}, {p.interval[1]:.2f}]", f"${p.mean_cost_usd:.6f}")
    terminal.out.print(table, soft_wrap=False)
    falls = ", ".join(f"{model} {share:.2f}" for model, share in found.fall_evidence.items())
    terminal.out.print(f"change test, each model's fall so far as a share of a change (1 moves its routes): {falls}",
                       markup=False)
    terminal.out.print(f"the evidence picks now: {found.evidence_picks or 'nothing yet (too little evidence)'}",
                       markup=False)


@guarded
def learn(
    candidates: Annotated[str | None, typer.Option(help="Models to learn about, comma-separated (default: "
                                                        "learning.exploration.candidates).")] = None,
    budget_usd: Annotated[str, typer.Option("--budget-usd", help="Stop before spending more than this "
                                                                 "(replays and judge calls).")] = "1.00",
    per_kind: Annotated[int, typer.Option(min=1, help="Replays per task kind and candidate.")] = 5,
    limit: Annotated[int, typer.Option(min=1, help="Replays at most.")] = 50,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan and its cost; run nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document for scripts.")] = False,
) -> None:
    """Replay a sample of stored turns on cheaper models, judge the answers, learn where they do well."""
    import asyncio
    from decimal import Decimal, InvalidOperation

    from rich.table import Table

    from metis_core.learning.replay_learning import ReplayLearner

    terminal = Terminal.open()
    try:
        budget = Decimal(budget_usd)
    except InvalidOperation:
        raise UsageProblem(f"--budget-usd {budget_usd!r} is not an amount; write e.g. 0.50") from None
    if budget < 0:
        raise UsageProblem("--budget-usd cannot be negative")
    with learning_runtime() as (_, learning):
        chosen = [c.strip() for c in candidates.split(",") if c.strip()] if candidates else \
            list(learning.settings.exploration.candidates)
        learner = ReplayLearner(learning)
        plan = learner.plan(chosen, per_kind=per_kind, limit=limit)
        if not as_json:
            terminal.out.print(f"plan: {len(plan.replays)} replay(s) on {', '.join(chosen)}, estimated "
                               f"${plan.estimated_usd:.4f} (budget ${budget})", markup=False)
            for model in plan.unpriced:
                terminal.warn(f"{model} has no price in the price table; left out (add it under prices:)")
        report = asyncio.run(learner.run(plan, budget, dry_run=dry_run))
    if as_json:
        terminal.out.print_json(json.dumps(report.to_json()))
        return
    if not dry_run:
        terminal.out.print(f"replayed {report.replayed} ({report.failed} failed), spent ${report.spent_usd:.4f}"
                           + (f"; {report.stopped_at_budget} left out at the budget" if report.stopped_at_budget
                              else ""), markup=False)
    table = Table("kind", "turns", "model", "outcomes (learned)", "success [90 %]", "mean cost", "routed",
                  "expected saving")
    for kind in report.kinds:
        for m in kind.models:
            table.add_row(_features(kind.features), str(kind.turns), m.model, f"{m.outcomes} ({m.learned})",
                          f"{m.success:.2f} [{m.interval[0]:.2f}, {m.interval[1]:.2f}]", f"${m.mean_cost_usd:.6f}",
                          "yes" if m.chosen else "", f"${m.saving_per_turn_usd * kind.turns:.4f}" if m.chosen else "")
    terminal.out.print(table, soft_wrap=False)
