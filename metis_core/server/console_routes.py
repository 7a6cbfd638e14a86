"""The console's JSON API: the sessions table, a session's timeline, usage (JSON or CSV), gateway
operations and quality. Read-only, cut to the client's clearance like the rest of the API.

Dates are `YYYY-MM-DD` or ISO 8601 times in UTC; a bare `until` date includes that whole day.
A bad parameter is a ConsoleQueryError (400) naming the parameter and what it accepts.
"""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import UTC, date, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from metis_core.errors import ConsoleQueryError, ServeAccessError, SessionNotFoundError
from metis_core.events.envelope import Event, Sensitivity
from metis_core.server.api_routes import clearance_of, context_of
from metis_core.server.console_metrics import (
    BUCKETS,
    GROUPS,
    USAGE_CSV_COLUMNS,
    gateway_operations,
    quality,
    usage_over_time,
)
from metis_core.server.console_timeline import timeline_json
from metis_core.store.session_page import SessionQuery, SessionRow
from metis_core.trace.call_rows import CallRow, call_rows

DEFAULT_DAYS = 30
MAX_DAYS = 366
_SESSION_FILTERS = ("status", "model", "key", "user", "team", "tool", "feedback", "q", "cursor")


def parse_time(name: str, text: str, *, end: bool = False) -> datetime:
    """`text` as an aware UTC time; a bare date is its midnight (or the next midnight when `end`)."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1 if end else 0)
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConsoleQueryError(f"{name}={text[:40]!r} is not a date; use YYYY-MM-DD or an ISO 8601 time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _range(request: Request, *, default_days: int | None) -> tuple[datetime | None, datetime | None]:
    params = request.query_params
    since = parse_time("since", params["since"]) if params.get("since") else None
    until = parse_time("until", params["until"], end=True) if params.get("until") else None
    if default_days is not None:
        until = until or datetime.now(UTC) + timedelta(seconds=1)
        since = since or until - timedelta(days=default_days)
        if until - since > timedelta(days=MAX_DAYS):
            raise ConsoleQueryError(f"the date range is longer than {MAX_DAYS} days; narrow `since`/`until`")
    if since is not None and until is not None and since >= until:
        raise ConsoleQueryError("the date range is empty: `since` must be before `until`")
    return since, until


def _choice(request: Request, name: str, allowed: dict[str, Any] | tuple[str, ...], default: str) -> str:
    value = request.query_params.get(name, default)
    if value not in allowed:
        raise ConsoleQueryError(f"unknown {name} {value!r}; use one of {', '.join(allowed)}")
    return value


def _number(request: Request, name: str, kind: type[int] | type[float], default: Any) -> Any:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        return kind(text)
    except ValueError:
        raise ConsoleQueryError(f"{name}={text[:40]!r} is not a number") from None


def session_row_json(row: SessionRow) -> dict[str, Any]:
    return {"id": row.id, "title": row.title, "started": row.started.isoformat(), "updated": row.updated.isoformat(),
            "status": row.status, "models": row.models, "turns": row.turns, "calls": row.calls,
            "input_tokens": row.input_tokens, "output_tokens": row.output_tokens,
            "cost_usd": format(row.cost_usd, "f"), "unpriced_calls": row.unpriced_calls, "latency_ms": row.latency_ms,
            "keys": row.keys, "users": row.users, "teams": row.teams, "tools": row.tools, "score": row.score,
            "feedback_up": row.feedback_up, "feedback_down": row.feedback_down, "hits": row.hits}


async def console_sessions(request: Request) -> JSONResponse:
    params = request.query_params
    since, until = _range(request, default_days=None)
    filters = {name: params[name] for name in _SESSION_FILTERS if params.get(name)}
    if filters.get("q") and clearance_of(request) is not Sensitivity.PRIVATE:
        raise ServeAccessError("searching session text needs private clearance: a gateway key with scope admin")
    query = SessionQuery(sort=_choice(request, "sort", ("updated", "started", "cost", "tokens_in", "tokens_out"),
                                      "updated"),
                         descending=_choice(request, "order", ("desc", "asc"), "desc") == "desc",
                         since=since, until=until, min_score=_number(request, "min_score", float, None),
                         limit=_number(request, "limit", int, 50), **filters)
    store = context_of(request).runtime.store
    page = await asyncio.to_thread(store.session_page, query)
    return JSONResponse({"sessions": [session_row_json(r) for r in page.rows], "next_cursor": page.next_cursor})


def visible(events: list[Event], clearance: Sensitivity) -> list[Event]:
    """The events with payloads more private than `clearance` emptied (their envelope kept)."""
    return [e if e.sensitivity.rank >= clearance.rank else e.model_copy(update={"payload": {}}) for e in events]


async def console_timeline(request: Request) -> JSONResponse:
    runtime = context_of(request).runtime
    session_id = request.path_params["session_id"]
    if not await asyncio.to_thread(runtime.store.has_session, session_id):
        raise SessionNotFoundError(f"no session {session_id!r}; list them at /api/console/sessions")
    await runtime.bus.aflush()
    events = await asyncio.to_thread(runtime.trace.replay, session_id)
    return JSONResponse(timeline_json(visible(events, clearance_of(request))))


async def _events(request: Request, types: list[str]) -> list[Event]:
    runtime = context_of(request).runtime
    since, until = _range(request, default_days=DEFAULT_DAYS)
    await runtime.bus.aflush()
    found = await asyncio.to_thread(runtime.trace.events, types=types, since=since, until=until)
    clearance = clearance_of(request)
    return [e for e in found if e.sensitivity.rank >= clearance.rank]


async def _calls(request: Request, types: tuple[str, ...]) -> list[CallRow]:
    runtime = context_of(request).runtime
    since, until = _range(request, default_days=DEFAULT_DAYS)
    await runtime.bus.aflush()
    found = await asyncio.to_thread(call_rows, runtime.trace, types, since, until)
    rank = clearance_of(request).rank
    return [c for c in found if Sensitivity(c.sensitivity).rank >= rank]


async def console_usage(request: Request) -> Response:
    bucket = _choice(request, "bucket", BUCKETS, "day")
    by = _choice(request, "by", GROUPS, "model")
    output = _choice(request, "format", ("json", "csv"), "json")
    data = usage_over_time(await _calls(request, ("llm.call_completed",)), bucket, by)
    if output == "json":
        return JSONResponse(data)
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow([by if c == "key" else c for c in USAGE_CSV_COLUMNS])
    for row in data["series"]:
        writer.writerow(["" if row[c] is None else _cell(row[c]) for c in USAGE_CSV_COLUMNS])
    return Response(text.getvalue(), media_type="text/csv; charset=utf-8",
                    headers={"content-disposition": f'attachment; filename="metis-usage-{by}-{bucket}.csv"'})


def _cell(value: Any) -> Any:
    """A CSV cell no spreadsheet runs as a formula (a key name is the user's text)."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


async def console_gateway(request: Request) -> JSONResponse:
    bucket = _choice(request, "bucket", BUCKETS, "hour")
    scope = _choice(request, "scope", ("gateway", "all"), "gateway")
    calls = await _calls(request, ("llm.call_completed", "llm.call_failed"))
    events = await _events(request, ["routing.provider_unavailable", "routing.provider_recovered",
                                     "gateway.quota_exceeded"])
    return JSONResponse(gateway_operations(calls, events, bucket, scope == "gateway"))


async def console_quality(request: Request) -> JSONResponse:
    bucket = _choice(request, "bucket", BUCKETS, "day")
    events = await _events(request, ["feedback.explicit", "feedback.implicit", "eval.completed", "route.decided",
                                     "pattern.matched"])
    model_of = {c.session_id: str(c.model) for c in await _calls(request, ("llm.call_completed",))}
    return JSONResponse(quality(events, model_of, bucket))


ROUTES = [
    Route("/api/console/sessions", console_sessions),
    Route("/api/console/sessions/{session_id}/timeline", console_timeline),
    Route("/api/console/usage", console_usage),
    Route("/api/console/gateway", console_gateway),
    Route("/api/console/quality", console_quality),
]
