"""One page of the console's sessions table: filters, a sort and a keyset cursor, on either backend.

The page itself is one query over `sessions` (an index walk for the default sort by last activity);
filters on what a session did (model, gateway key, user, team, tool, score, feedback, refusals,
message text) are EXISTS / IN subqueries. The page's rows are then enriched with a few grouped
queries keyed by their ids, so the cost of a page does not grow with the store.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson

from metis_core.errors import ConsoleQueryError
from metis_core.store.backend import Database
from metis_core.store.records import from_us, to_us

SORTS = {
    "updated": "updated_at",
    "started": "created_at",
    "cost": "CAST(total_cost_usd AS DOUBLE PRECISION)",  # SQLite: REAL affinity; PostgreSQL: float8
    "tokens_in": "total_input_tokens",
    "tokens_out": "total_output_tokens",
}
"""Sort name -> the SQL it orders by (every one ties on id)."""

STATUSES = {"ok": "disposition = 'completed'", "error": "disposition = 'error'",
            "cancelled": "disposition = 'abandoned'", "open": "disposition IS NULL"}
REFUSAL_TYPES = ("llm.output_refused",)
"""Events that make a session `refused` (so does a completed call whose stop reason is `refusal`).
A gateway quota refusal belongs to no session: the gateway page lists those."""
_CALL_FIELDS = {"model": "model", "key": "gateway_key_id", "user": "user_id", "team": "team_id"}
_JSON_FIELD = {"sqlite": "json_extract({column}, '$.{key}')", "postgres": "{column}->>'{key}'"}
_LIKE = {"sqlite": "LIKE", "postgres": "ILIKE"}
_TEXT_HIT = {
    "sqlite": ("SELECT m.session_id FROM messages m, json_each(m.content_json) b WHERE {prefilter}"
               "json_extract(b.value, '$.type') = 'text' AND json_extract(b.value, '$.text') LIKE ? ESCAPE '\\'"),
    "postgres": ("SELECT m.session_id FROM messages m, jsonb_array_elements(m.content_json) b WHERE {prefilter}"
                 "b->>'type' = 'text' AND b->>'text' ILIKE ? ESCAPE '\\'"),
}
_RAW_TEXT = {"sqlite": "m.content_json LIKE ? ESCAPE '\\' AND ",
             "postgres": "m.content_json::text ILIKE ? ESCAPE '\\' AND "}
MAX_HITS = 3
SNIPPET = 60


@dataclass(frozen=True)
class SessionQuery:
    """What the sessions table asks for. Every text filter is an exact value, `q` a substring."""

    sort: str = "updated"
    descending: bool = True
    since: datetime | None = None
    """Started at or after (inclusive); `until` is exclusive."""
    until: datetime | None = None
    status: str | None = None
    model: str | None = None
    key: str | None = None
    user: str | None = None
    team: str | None = None
    tool: str | None = None
    min_score: float | None = None
    feedback: str | None = None
    """`up` or `down`: sessions with that explicit rating."""
    q: str | None = None
    cursor: str | None = None
    limit: int = 50

    def __post_init__(self) -> None:
        if self.sort not in SORTS:
            raise ConsoleQueryError(f"unknown sort {self.sort!r}; use one of {', '.join(SORTS)}")
        if self.status is not None and self.status not in (*STATUSES, "refused"):
            raise ConsoleQueryError(f"unknown status {self.status!r}; use one of {', '.join(STATUSES)}, refused")
        if self.feedback is not None and self.feedback not in ("up", "down"):
            raise ConsoleQueryError(f"unknown feedback {self.feedback!r}; use up or down")
        if not 1 <= self.limit <= 500:
            raise ConsoleQueryError(f"limit {self.limit} is out of range; use 1 to 500")
        if self.since and self.until and self.since >= self.until:
            raise ConsoleQueryError("the date range is empty: `since` must be before `until`")


@dataclass
class SessionRow:
    """One line of the table: the session's own columns plus what its events and messages say."""

    id: str
    title: str | None
    started: datetime
    updated: datetime
    status: str
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal
    unpriced_calls: int
    active_model: str | None
    models: list[str] = field(default_factory=list)
    turns: int = 0
    calls: int = 0
    latency_ms: int = 0
    keys: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    teams: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    score: float | None = None
    feedback_up: int = 0
    feedback_down: int = 0
    hits: list[str] = field(default_factory=list)
    """Text around each match of `q` (title or messages), at most MAX_HITS."""


@dataclass
class SessionPage:
    rows: list[SessionRow]
    next_cursor: str | None


def like_pattern(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _encode_cursor(value: Any, session_id: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([value, session_id])).decode().rstrip("=")


def _decode_cursor(cursor: str, sort: str) -> tuple[Any, str]:
    try:
        value, session_id = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        valid = isinstance(session_id, str) and isinstance(value, (int, float)) and not isinstance(value, bool)
    except (ValueError, TypeError):
        valid = False
    if not valid:
        raise ConsoleQueryError(f"cursor {cursor[:40]!r} is not one this API gave out for sort {sort!r}; "
                                "start again without `cursor`")
    return value, session_id


def _where(db: Database, query: SessionQuery) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    field_sql = _JSON_FIELD[db.backend]
    if query.since is not None:
        clauses.append("created_at >= ?")
        params.append(to_us(query.since))
    if query.until is not None:
        clauses.append("created_at < ?")
        params.append(to_us(query.until))
    if query.status == "refused":
        marks = ", ".join("?" for _ in REFUSAL_TYPES)
        stop = field_sql.format(column="e.payload_json", key="stop_reason")
        clauses.append(f"EXISTS (SELECT 1 FROM events e WHERE e.session_id = sessions.id AND (e.type IN ({marks}) "
                       f"OR (e.type = 'llm.call_completed' AND {stop} = 'refusal')))")
        params.extend(REFUSAL_TYPES)
    elif query.status is not None:
        clauses.append(STATUSES[query.status])
    for name, key in _CALL_FIELDS.items():
        value = getattr(query, name)
        if value is None:
            continue
        called = ("EXISTS (SELECT 1 FROM events e WHERE e.session_id = sessions.id AND e.type = 'llm.call_completed' "
                  f"AND {field_sql.format(column='e.payload_json', key=key)} = ?)")
        clauses.append(f"(active_model = ? OR {called})" if name == "model" else called)
        params.extend([value, value] if name == "model" else [value])
    if query.tool is not None:
        clauses.append("EXISTS (SELECT 1 FROM tool_calls t WHERE t.session_id = sessions.id AND t.name = ?)")
        params.append(query.tool)
    if query.min_score is not None:
        clauses.append("EXISTS (SELECT 1 FROM eval_verdicts v WHERE v.session_id = sessions.id AND v.score >= ?)")
        params.append(query.min_score)
    if query.feedback is not None:
        clauses.append("EXISTS (SELECT 1 FROM events e WHERE e.session_id = sessions.id AND e.type = "
                       f"'feedback.explicit' AND {field_sql.format(column='e.payload_json', key='rating')} = ?)")
        params.append("thumbs_up" if query.feedback == "up" else "thumbs_down")
    if query.q:
        pattern = like_pattern(query.q)
        raw_ok = not any(c in query.q for c in '"\\') and query.q.isprintable()  # same text in the JSON
        subquery = _TEXT_HIT[db.backend].format(prefilter=_RAW_TEXT[db.backend] if raw_ok else "")
        clauses.append(f"(title {_LIKE[db.backend]} ? ESCAPE '\\' OR id IN ({subquery}))")
        params.extend([pattern, *([pattern] if raw_ok else []), pattern])
    return clauses, params


def read_session_page(db: Database, query: SessionQuery) -> SessionPage:
    """The page `query` asks for, and the cursor of the next one (None on the last page)."""
    order = SORTS[query.sort]
    clauses, params = _where(db, query)
    direction, before = ("DESC", "<") if query.descending else ("ASC", ">")
    if query.cursor:
        value, after_id = _decode_cursor(query.cursor, query.sort)
        clauses.append(f"({order} {before} ? OR ({order} = ? AND id {before} ?))")
        params.extend([value, value, after_id])
    where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
    sql = (f"SELECT id, title, created_at, updated_at, disposition, total_input_tokens, total_output_tokens, "
           f"total_cost_usd, unpriced_message_count, active_model, {order} FROM sessions {where}"
           f"ORDER BY {order} {direction}, id {direction} LIMIT ?")
    found = db.execute(sql, [*params, query.limit + 1]).fetchall()
    more = len(found) > query.limit
    found = found[: query.limit]
    rows = [SessionRow(id=r[0], title=r[1], started=from_us(int(r[2])), updated=from_us(int(r[3])),
                       status=_status(r[4]), input_tokens=int(r[5]), output_tokens=int(r[6]),
                       cost_usd=Decimal(str(r[7])), unpriced_calls=int(r[8]), active_model=r[9]) for r in found]
    _enrich(db, rows, query.q)
    last = found[-1] if found else None
    sort_value = None if last is None else (float(last[10]) if query.sort == "cost" else int(last[10]))
    return SessionPage(rows, _encode_cursor(sort_value, last[0]) if more and last is not None else None)


def _status(disposition: str | None) -> str:
    return {"completed": "ok", "error": "error", "abandoned": "cancelled"}.get(disposition or "", "open")


def _payload(value: Any) -> dict[str, Any]:
    loaded = orjson.loads(value) if isinstance(value, (str, bytes)) else value
    return loaded if isinstance(loaded, dict) else {}


def _enrich(db: Database, rows: list[SessionRow], q: str | None) -> None:
    """Fill what the page's sessions did, from a few queries over the page's ids."""
    if not rows:
        return
    by_id = {row.id: row for row in rows}
    marks = ", ".join("?" for _ in by_id)
    ids = list(by_id)
    for session_id, count in db.execute(
            f"SELECT session_id, COUNT(*) FROM messages WHERE role = 'user' AND session_id IN ({marks}) "
            "GROUP BY session_id", ids):
        by_id[session_id].turns = int(count)
    kinds = ("llm.call_completed", "feedback.explicit", *REFUSAL_TYPES)
    kind_marks = ", ".join("?" for _ in kinds)
    for session_id, kind, payload_value in db.execute(
            f"SELECT session_id, type, payload_json FROM events WHERE session_id IN ({marks}) "
            f"AND type IN ({kind_marks}) ORDER BY id", [*ids, *kinds]):
        row, payload = by_id[session_id], _payload(payload_value)
        if kind == "llm.call_completed":
            if payload.get("stop_reason") == "refusal" and row.status != "error":
                row.status = "refused"
            row.calls += 1
            row.latency_ms += int(payload.get("latency_ms") or 0)
            for values, name in ((row.models, "model"), (row.keys, "gateway_key_id"), (row.users, "user_id"),
                                 (row.teams, "team_id")):
                if payload.get(name) and payload[name] not in values:
                    values.append(str(payload[name]))
        elif kind == "feedback.explicit":
            if payload.get("rating") == "thumbs_up":
                row.feedback_up += 1
            else:
                row.feedback_down += 1
        elif row.status != "error":
            row.status = "refused"
    for session_id, name in db.execute(
            f"SELECT DISTINCT session_id, name FROM tool_calls WHERE session_id IN ({marks}) ORDER BY name", ids):
        by_id[session_id].tools.append(str(name))
    for session_id, score in db.execute(
            f"SELECT session_id, AVG(score) FROM eval_verdicts WHERE session_id IN ({marks}) GROUP BY session_id", ids):
        by_id[session_id].score = round(float(score), 4)
    for row in rows:
        if not row.models and row.active_model:
            row.models.append(row.active_model)
    if q:
        _hits(db, by_id, q, marks)


def _hits(db: Database, by_id: dict[str, SessionRow], q: str, marks: str) -> None:
    needle = q.lower()
    for row in by_id.values():
        if row.title and needle in row.title.lower():
            row.hits.append(_snippet(row.title, needle))
    hits: dict[str, list[str]] = defaultdict(list)
    for session_id, content in db.execute(
            f"SELECT session_id, content_json FROM messages WHERE session_id IN ({marks}) ORDER BY id", list(by_id)):
        if len(hits[session_id]) + len(by_id[session_id].hits) >= MAX_HITS:
            continue
        blocks = orjson.loads(content) if isinstance(content, (str, bytes)) else content
        for block in blocks or []:
            text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
            if isinstance(text, str) and needle in text.lower():
                hits[session_id].append(_snippet(text, needle))
    for session_id, found in hits.items():
        by_id[session_id].hits.extend(found[: MAX_HITS - len(by_id[session_id].hits)])


def _snippet(text: str, needle: str) -> str:
    """The text around the first match, cut at SNIPPET characters either side (the client marks the match)."""
    at = text.lower().find(needle)
    start, end = max(0, at - SNIPPET), min(len(text), at + len(needle) + SNIPPET)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
