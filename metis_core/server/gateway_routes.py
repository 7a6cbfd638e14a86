"""`GET /api/gateway/keys`: the gateway's keys and the limits of their users and teams, read-only.

Never a token or its hash: a key shows its id, name, scope, public prefix, subjects, models, budget
(with the current window's spent, reserved and remaining), rates, expiry and revocation. Admin
clearance only. An empty list when the gateway never ran.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from metis_core.errors import ServeAccessError
from metis_core.events.envelope import Sensitivity
from metis_core.server.api_routes import clearance_of, context_of
from metis_core.store.gateway_keys import (
    GatewayKeyRecord,
    GatewayKeyStore,
    SubjectLimits,
    budget_usage,
    open_gateway_key_store,
)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def key_json(key: GatewayKeyRecord) -> dict[str, Any]:
    return {"id": key.id, "name": key.name, "prefix": key.prefix, "user_id": key.user_id, "team_id": key.team_id,
            "allowed_models": list(key.allowed_models) if key.allowed_models is not None else None,
            "budget_usd": format(key.budget_usd, "f") if key.budget_usd is not None else None,
            "budget_period": key.budget_period, "rpm": key.rpm, "tpm": key.tpm,
            "created_at": _iso(key.created_at), "expires_at": _iso(key.expires_at),
            "revoked_at": _iso(key.revoked_at), "revoke_reason": key.revoke_reason,
            "replaced_by": key.replaced_by, "grace_until": _iso(key.grace_until), "scope": key.scope}


def limits_json(limits: SubjectLimits) -> dict[str, Any]:
    return {"scope": limits.scope, "subject_id": limits.subject_id,
            "budget_usd": format(limits.budget_usd, "f") if limits.budget_usd is not None else None,
            "budget_period": limits.budget_period, "rpm": limits.rpm, "tpm": limits.tpm}


def _with_usage(store: GatewayKeyStore, row: dict[str, Any], scope: Any, subject_id: str, budget: Any, period: Any,
                now: datetime) -> dict[str, Any]:
    """`row` with its budget's current window: spent_usd, reserved_usd, remaining_usd (None without a budget)."""
    usage = budget_usage(store, scope, subject_id, budget, period, now)
    row.update(usage.as_json() if usage is not None else {"spent_usd": None, "reserved_usd": None,
                                                           "remaining_usd": None})
    return row


def _read(store: GatewayKeyStore) -> dict[str, Any]:
    keys = store.list_keys()
    subjects = sorted({("user", k.user_id) for k in keys if k.user_id} | {("team", k.team_id) for k in keys
                                                                          if k.team_id})
    limits = [found for scope, subject in subjects
              if (found := store.limits(scope, subject)) is not None]  # type: ignore[arg-type]
    now = datetime.now(UTC)
    return {"keys": [_with_usage(store, key_json(k), "gateway_key", k.id, k.budget_usd, k.budget_period, now)
                     for k in keys],
            "limits": [_with_usage(store, limits_json(x), x.scope, x.subject_id, x.budget_usd, x.budget_period, now)
                       for x in limits]}


def _read_runtime_store(database: Any) -> dict[str, Any]:
    store = open_gateway_key_store(database)  # the runtime's backend: SQLite file or PostgreSQL
    try:
        return _read(store)
    finally:
        store.close()


async def gateway_keys(request: Request) -> JSONResponse:
    """The keys of the store this server checks keys against; the runtime's database when it checks none."""
    if clearance_of(request) is not Sensitivity.PRIVATE:
        raise ServeAccessError("gateway keys and quotas need a gateway key with scope admin")
    context = context_of(request)
    if context.access.keys is not None:
        return JSONResponse(await asyncio.to_thread(_read, context.access.keys.keys.store))
    return JSONResponse(await asyncio.to_thread(_read_runtime_store, context.runtime.shared_database))


ROUTES = [Route("/api/gateway/keys", gateway_keys)]
