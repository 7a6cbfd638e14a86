"""The trace as people read it: one-line event descriptions, the causal tree, the event table.

The tree is `events.causality.build_tree` drawn with rich: each model call shows its model,
tokens, cost and latency; tool calls show their outcome. Rendering only — the events come from
TraceStore and are never changed here.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from metis_core.cli.render import cost_text, format_usd, preview
from metis_core.events.causality import CausalNode, build_tree
from metis_core.events.envelope import Event

STYLES = {
    "llm.call_completed": "green", "llm.call_failed": "red", "tool.failed": "red", "turn.cancelled": "yellow",
    "tool.called": "cyan", "tool.completed": "cyan", "route.decided": "magenta", "turn.started": "bold",
}  # fmt: skip


def _tokens(p: dict[str, Any]) -> str:
    return f"{p.get('input_tokens', 0)} in / {p.get('output_tokens', 0)} out"


def _count(n: object, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _winner_reason(p: dict[str, Any]) -> str:
    """Why the routing chain chose (the winning policy's reason, as route.decided stored it)."""
    chain, index = p.get("chain") or [], p.get("winner_index")
    if not isinstance(index, int) or not 0 <= index < len(chain) or not chain[index].get("reason"):
        return ""
    return f" · {chain[index]['reason']}"


def _call_cost(p: dict[str, Any]) -> str:
    """A call's cost; a model without a price is `cost unknown` (the payload's 0.0 is no price)."""
    return "cost unknown" if p.get("pricing_version") == "unpriced" else format_usd(p.get("cost_usd"))


def _turn_cost(p: dict[str, Any]) -> str:
    unpriced = int((p.get("signals_extra") or {}).get("unpriced_calls") or 0)
    return cost_text(Decimal(str(p.get("total_cost_usd") or 0)), unpriced)


def unpriced_calls(events: list[Event]) -> int:
    """The session's model calls that had no price (session.ended's total leaves them out)."""
    return sum(1 for e in events if e.type == "llm.call_completed" and e.payload.get("pricing_version") == "unpriced")


def describe(event: Event, session_unpriced: int = 0) -> str:
    """What happened, in one line, with the figures that matter for that type (`session_unpriced`: the
    session's unpriced calls, so its total says so)."""
    p = event.payload
    details = {
        "session.created": lambda: f"model {p.get('initial_active_model') or '(routing default)'}",
        "session.ended": lambda: f"{p.get('disposition')} · {p.get('turn_count')} turns · "
                                 f"{cost_text(Decimal(str(p.get('total_cost_usd') or 0)), session_unpriced)}",
        "route.decided": lambda: f"→ {p.get('chosen_model')}" + _winner_reason(p),
        "pattern.matched": lambda: f"{p.get('chosen_model')} · confidence {float(p.get('confidence') or 0):.2f} · "
                                   f"{p.get('sample_size')} samples · {p.get('alternatives_count')} models scored "
                                   f"on {p.get('k_cluster_size')} similar fingerprint(s) · "
                                   f"{p.get('fingerprint_kind')} {p.get('fingerprint_id')}",
        "llm.call_started": lambda: f"{p.get('model')}",
        "llm.call_completed": lambda: f"{p.get('model')} · {_tokens(p)} tokens · {_call_cost(p)} · "
                                      f"{p.get('latency_ms')} ms · {p.get('stop_reason')}",
        "llm.call_failed": lambda: f"{p.get('model')} · {p.get('error_class')}: "
                                   f"{preview(str(p.get('error_message_redacted', '')), 100)}",
        "tool.called": lambda: f"{p.get('tool_name')} ({p.get('side_effects')})",
        "tool.confirmation_requested": lambda: f"{p.get('tool_name')}: {preview(str(p.get('input_summary')), 80)}",
        "tool.confirmation_resolved": lambda: f"{p.get('decision')}" + (f" ({p['scope']})" if p.get("scope") else ""),
        "tool.completed": lambda: f"{p.get('output_size_bytes')} bytes · {p.get('latency_ms')} ms",
        "tool.failed": lambda: f"{p.get('error_class')}: {preview(str(p.get('error_message', '')), 80)}",
        "tool.input_invalid": lambda: f"{p.get('tool_name')}: {'; '.join(p.get('validation_errors') or [])}",
        "turn.completed": lambda: f"{_count(p.get('llm_call_count'), 'call')} · "
                                  f"{_count(p.get('tool_call_count'), 'tool call')} · "
                                  f"{p.get('total_input_tokens')} in / {p.get('total_output_tokens')} out tokens · "
                                  f"{_turn_cost(p)} · {p.get('wall_time_seconds')} s",
        "turn.cancelled": lambda: f"{p.get('reason')}",
        "delegate.started": lambda: f"{p.get('tier')} → {p.get('resolved_model')} · worker "
                                    f"{p.get('worker_session_id')}",
        "delegate.completed": lambda: f"{p.get('model')} · {_count(p.get('llm_call_count'), 'call')} · "
                                      f"{format_usd(Decimal(str(p.get('worker_total_cost_usd') or 0)))} · "
                                      f"{p.get('wall_time_seconds')} s",
        "delegate.failed": lambda: f"{p.get('failure_mode')}: {preview(str(p.get('error_message', '')), 80)}",
        "trace.swept": lambda: f"{p.get('rows_deleted')} rows{' (dry run)' if p.get('dry_run') else ''}",
    }.get(event.type)
    return details() if details is not None else ""


def _label(event: Event, parent_missing: bool = False, session_unpriced: int = 0) -> Text:
    label = Text(event.type, style=STYLES.get(event.type, ""))
    detail = describe(event, session_unpriced)
    if detail:
        label.append(f"  {detail}", style="dim" if event.type not in ("llm.call_completed",) else "")
    if parent_missing:
        label.append("  (parent not in the trace)", style="yellow")
    return label


WorkerEvents = Callable[[str], list[Event]]
"""Loads a worker session's events, so a delegation shows its worker's tree under delegate.started."""


def trace_tree(session_id: str, events: list[Event], worker_events: WorkerEvents | None = None) -> Tree:
    """The session's events arranged by their parent pointers (workers' under their delegate.started)."""
    tree = Tree(Text(f"session {session_id}", style="bold"))
    _add_session(tree, events, worker_events)
    return tree


def _add_session(tree: Tree, events: list[Event], worker_events: WorkerEvents | None) -> None:
    causal = build_tree(events)
    unpriced = unpriced_calls(events)

    def add(branch: Tree, node: CausalNode) -> None:
        child = branch.add(_label(node.event, node.parent_missing, unpriced))
        worker = node.event.payload.get("worker_session_id") if node.event.type == "delegate.started" else None
        if worker and worker_events is not None:
            sub = child.add(Text(f"worker session {worker}", style="bold dim"))
            _add_session(sub, worker_events(str(worker)), None)  # workers never delegate further
        for grandchild in node.children:
            add(child, grandchild)

    for root in causal.roots:
        add(tree, root)
    if not events:
        tree.add(Text("(no events recorded)", style="dim"))


def events_table(events: list[Event]) -> Table:
    table = Table(title=None, show_lines=False)
    for column in ("time", "type", "actor", "event", "parent", "details"):
        table.add_column(column, overflow="fold")
    unpriced = unpriced_calls(events)
    for event in events:
        table.add_row(
            event.timestamp.strftime("%H:%M:%S.%f")[:-3], Text(event.type, style=STYLES.get(event.type, "")),
            event.actor.value, event.id[-8:], (event.parent_event_id or "")[-8:], describe(event, unpriced),
        )
    return table
