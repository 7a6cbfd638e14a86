"""The read-only JSON API: sessions, messages, trace, cost, audit and models.

Every answer is cut to the client's clearance: an event more private than the client may see
keeps its envelope (id, type, parents, time) with the payload withheld, and messages (private by
nature) need private clearance. Nothing here reads a key or config secret.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from metis_core.errors import ServeAccessError, SessionNotFoundError
from metis_core.events.catalog import AUDIT_EVENT_TYPES
from metis_core.events.envelope import Event, Sensitivity
from metis_core.server.wiring import ServerContext
from metis_core.store.records import SessionRecord

MAX_LIMIT = 1_000


def context_of(request: Request) -> ServerContext:
    context: ServerContext = request.app.state.context
    return context


def clearance_of(request: Request) -> Sensitivity:
    clearance: Sensitivity = request.scope["state"]["clearance"]
    return clearance


def _limit(request: Request, default: int) -> int:
    try:
        return max(1, min(MAX_LIMIT, int(request.query_params.get("limit", default))))
    except ValueError:
        return default


def session_json(record: SessionRecord, answered_by: str | None = None) -> dict[str, Any]:
    """A session's JSON form; `answered_by`: the model of its last answer (the model lists show)."""
    return {"id": record.id, "title": record.title, "active_model": record.active_model, "answered_by": answered_by,
            "workspace_path": record.workspace_path, "created_at": record.created_at.isoformat(),
            "updated_at": record.updated_at.isoformat(),
            "ended_at": record.ended_at.isoformat() if record.ended_at else None,
            "disposition": record.disposition, "total_cost_usd": format(record.total_cost_usd, "f"),
            "unpriced_calls": record.unpriced_message_count}


def visible_event(event: Event, clearance: Sensitivity) -> dict[str, Any]:
    """The event's JSON form; its payload withheld when it is more private than `clearance`."""
    data = event.model_dump(mode="json")
    if event.sensitivity.rank < clearance.rank:
        data["payload"] = None
        data["withheld"] = True
    return data


async def list_sessions(request: Request) -> JSONResponse:
    store = context_of(request).runtime.store
    query, limit = request.query_params.get("q", "").strip(), _limit(request, 50)
    if query and clearance_of(request) is not Sensitivity.PRIVATE:
        raise ServeAccessError("searching session text needs private clearance: a gateway key with scope admin")
    if query:
        records = await asyncio.to_thread(store.search_sessions, query, limit)
    else:
        records = await asyncio.to_thread(store.list_sessions, limit)
    answered = await asyncio.to_thread(store.answering_models, [r.id for r in records])
    return JSONResponse({"sessions": [session_json(r, answered.get(r.id)) for r in records]})


async def get_session(request: Request) -> JSONResponse:
    store = context_of(request).runtime.store
    record = await asyncio.to_thread(store.get_session, request.path_params["session_id"])
    totals = await asyncio.to_thread(store.session_totals, record.id)
    answered = await asyncio.to_thread(store.answering_models, [record.id])
    return JSONResponse({"session": session_json(record, answered.get(record.id)), "totals": _plain(vars(totals))})


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return {k: format(v, "f") if isinstance(v, Decimal) else v for k, v in values.items()}


async def get_messages(request: Request) -> JSONResponse:
    if clearance_of(request) is not Sensitivity.PRIVATE:
        raise ServeAccessError("messages are private content: they need a gateway key with scope admin")
    store = context_of(request).runtime.store
    session_id = request.path_params["session_id"]
    if not await asyncio.to_thread(store.has_session, session_id):
        raise SessionNotFoundError(f"no session {session_id!r}; list them at /api/sessions")
    messages = await asyncio.to_thread(store.load_messages, session_id)
    return JSONResponse({"messages": [m.model_dump(mode="json") for m in messages]})


async def get_trace(request: Request) -> JSONResponse:
    runtime = context_of(request).runtime
    session_id = request.path_params["session_id"]
    await runtime.bus.aflush()
    events = await asyncio.to_thread(runtime.trace.replay, session_id, request.query_params.get("after"))
    clearance = clearance_of(request)
    return JSONResponse({"events": [visible_event(e, clearance) for e in events]})


async def get_cost(request: Request) -> JSONResponse:
    """Spend from `llm.call_completed`: per day, model, gateway key, user and team; a row's
    `unpriced_calls` says how many calls its `cost_usd` leaves out (a total is then a lower bound)."""
    runtime = context_of(request).runtime
    try:
        days = max(1, min(366, int(request.query_params.get("days", 30))))
    except ValueError:
        days = 30
    since = datetime.now(UTC) - timedelta(days=days)
    calls = await asyncio.to_thread(runtime.trace.events, types=["llm.call_completed"], since=since)
    groups: dict[str, dict[str, dict[str, Any]]] = {g: defaultdict(_zero) for g in
                                                    ("day", "model", "gateway_key", "user", "team")}
    for event in calls:
        p = event.payload
        keys = {"day": event.timestamp.date().isoformat(), "model": p["model"],
                "gateway_key": p.get("gateway_key_id"), "user": p.get("user_id"), "team": p.get("team_id")}
        for group, key in keys.items():
            if key is not None:
                row = groups[group][key]
                row["calls"] += 1
                row["input_tokens"] += p["input_tokens"]
                row["output_tokens"] += p["output_tokens"]
                if p.get("pricing_version") == "unpriced":  # the payload's 0.0 is no price, not a free call
                    row["unpriced_calls"] += 1
                else:
                    row["cost_usd"] += Decimal(str(p["cost_usd"]))
    return JSONResponse({"days": days, **{
        group: [{"key": key, **_priced(row)} for key, row in sorted(rows.items())] for group, rows in groups.items()}})


def _zero() -> dict[str, Any]:
    return {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": Decimal(0), "unpriced_calls": 0}


def _priced(row: dict[str, Any]) -> dict[str, Any]:
    """A spend row: `cost_usd` the priced calls' sum (null when no call had a price), `unpriced_calls` the rest."""
    plain = _plain(row)
    if row["unpriced_calls"] == row["calls"]:
        plain["cost_usd"] = None
    return plain


async def get_audit(request: Request) -> JSONResponse:
    runtime = context_of(request).runtime
    await runtime.bus.aflush()
    events = await asyncio.to_thread(runtime.trace.events, types=AUDIT_EVENT_TYPES)
    clearance = clearance_of(request)
    limit = _limit(request, 200)
    return JSONResponse({"events": [visible_event(e, clearance) for e in events[-limit:]]})


async def get_models(request: Request) -> JSONResponse:
    runtime = context_of(request).runtime
    models = [{"id": m.id, "provider": m.provider, "display_name": m.display_name, "aliases": list(m.aliases),
               "configured": runtime.is_configured(m.id),
               "capabilities": m.capabilities.model_dump(mode="json")} for m in runtime.registry.models()]
    return JSONResponse({"default": runtime.config.default_model, "models": models})


ROUTES = [
    Route("/api/sessions", list_sessions),
    Route("/api/sessions/{session_id}", get_session),
    Route("/api/sessions/{session_id}/messages", get_messages),
    Route("/api/sessions/{session_id}/trace", get_trace),
    Route("/api/cost", get_cost),
    Route("/api/audit", get_audit),
    Route("/api/models", get_models),
]
