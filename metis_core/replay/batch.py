"""`metis replay --sessions QUERY`: the same comparison over many sessions, summarised.

A query is space-separated terms: `workspace:PATH`, `since:YYYY-MM-DD`, `until:YYYY-MM-DD`
(creation date, `until` inclusive), `tag:NAME` (sessions whose title carries `#NAME`; the store
has no tag column), `limit:N`, `replays:include|only` and free words (title or message text contain
them). Sessions that are themselves replays (`replay_of` set) are left out unless `replays:` asks
for them. A session that cannot be replayed is listed, not fatal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from metis_core.errors import ReplayError
from metis_core.replay.compare import DEFAULT_TEXT_THRESHOLD
from metis_core.replay.session_replay import ReplayReport, replay_session
from metis_core.store.records import SessionRecord

if TYPE_CHECKING:
    from metis_core.agent.runtime import Runtime
    from metis_core.store.sessions import SessionStore

DEFAULT_LIMIT = 50
SCAN_LIMIT = 100_000


@dataclass(frozen=True)
class SessionQuery:
    workspace: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    tag: str | None = None
    text: str | None = None
    limit: int = DEFAULT_LIMIT
    replays: Literal["exclude", "include", "only"] = "exclude"
    """Whether sessions made by `metis replay` are left out (default), selected too, or alone."""


def _date(term: str, value: str) -> datetime:
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ReplayError(f"{term}:{value} is not a date; write {term}:YYYY-MM-DD") from None


def parse_query(query: str) -> SessionQuery:
    """A SessionQuery from the `--sessions` text (see the module docstring); ReplayError names a bad term."""
    found: dict[str, Any] = {}
    words: list[str] = []
    for term in query.split():
        name, sep, value = term.partition(":")
        if not sep or name not in ("workspace", "since", "until", "tag", "limit", "replays"):
            words.append(term)
            continue
        if not value:
            example = "2026-01-31" if name in ("since", "until") else "x"
            raise ReplayError(f"{name}: needs a value, e.g. {name}:{example}")
        if name in ("since", "until"):
            day = _date(name, value)
            found[name] = day + timedelta(days=1) if name == "until" else day
        elif name == "limit":
            if not value.isdigit() or int(value) < 1:
                raise ReplayError(f"limit:{value} must be a positive number of sessions")
            found["limit"] = int(value)
        elif name == "replays":
            if value not in ("exclude", "include", "only"):
                raise ReplayError(f"replays:{value} must be replays:include (replay sessions too), "
                                  "replays:only or replays:exclude (the default)")
            found["replays"] = value
        else:
            found[name] = value
    if words:
        found["text"] = " ".join(words)
    return SessionQuery(**found)


def matching_sessions(store: SessionStore, query: SessionQuery) -> list[SessionRecord]:
    """Sessions the query selects, most recently updated first, at most `limit`."""
    if query.text:
        records = store.search_sessions(query.text, SCAN_LIMIT)
        if query.workspace is not None:
            allowed = {r.id for r in store.list_sessions(SCAN_LIMIT, workspace=query.workspace)}
            records = [r for r in records if r.id in allowed]
    else:
        records = store.list_sessions(SCAN_LIMIT, workspace=query.workspace)
    chosen: list[SessionRecord] = []
    for record in records:
        title = record.title or ""
        is_replay = record.replay_of is not None
        if (query.replays == "exclude" and is_replay) or (query.replays == "only" and not is_replay):
            continue
        if query.since is not None and record.created_at < query.since:
            continue
        if query.until is not None and record.created_at >= query.until:
            continue
        if query.tag is not None and f"#{query.tag}" not in title.split():
            continue
        chosen.append(record)
        if len(chosen) >= query.limit:
            break
    return chosen


@dataclass
class BatchReport:
    query: str
    model: str
    reports: list[ReplayReport] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(session id, why it was not replayed)."""

    def summary(self) -> dict[str, Any]:
        turns = [t for r in self.reports for t in r.turns]
        diverged = sum(1 for t in turns if t.diverged)
        tool_turns = sum(1 for t in turns if any(d.point == "tool_call" for d in t.divergences))
        text_turns = sum(1 for t in turns if any(d.point == "text" for d in t.divergences))
        original = _sum([t.original.cost_usd for t in turns])
        replay = _sum([t.replay.cost_usd for t in turns])
        count = len(turns) or 1
        return {
            "sessions": len(self.reports), "sessions_skipped": len(self.skipped),
            "sessions_diverged": sum(1 for r in self.reports if r.diverged_turns),
            "turns": len(turns), "diverged_turns": diverged,
            "divergence_rate": round(diverged / count, 4) if turns else 0.0,
            "tool_call_divergence_rate": round(tool_turns / count, 4) if turns else 0.0,
            "text_divergence_rate": round(text_turns / count, 4) if turns else 0.0,
            "original_cost_usd": format(original, "f") if original is not None else None,
            "replay_cost_usd": format(replay, "f") if replay is not None else None,
            "cost_ratio": (round(float(replay / original), 4)
                           if original is not None and replay is not None and original > 0 else None),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query, "model": self.model, "summary": self.summary(),
            "sessions": [{**r.summary(), "source_session_id": r.source_session_id,
                          "replay_session_id": r.replay_session_id} for r in self.reports],
            "skipped": [{"session_id": sid, "reason": why} for sid, why in self.skipped],
        }


def _sum(values: list[Decimal | None]) -> Decimal | None:
    return None if any(v is None for v in values) else sum((v for v in values if v is not None), Decimal(0))


async def replay_sessions(
    rt: Runtime,
    query: str,
    model: str,
    *,
    live_tools: bool = False,
    text_threshold: float = DEFAULT_TEXT_THRESHOLD,
    on_session: Callable[[ReplayReport], None] | None = None,
) -> BatchReport:
    """Replay every session the query selects on `model`; ReplayError when none matches."""
    records = matching_sessions(rt.store, parse_query(query))
    if not records:
        raise ReplayError(f"no stored session matches {query!r}; `metis sessions list` shows what there is")
    batch = BatchReport(query, model)
    for record in records:
        try:
            report = await replay_session(rt, record.id, model, live_tools=live_tools, text_threshold=text_threshold)
        except ReplayError as error:
            batch.skipped.append((record.id, str(error)))
            continue
        batch.reports.append(report)
        if on_session is not None:
            on_session(report)
    return batch
