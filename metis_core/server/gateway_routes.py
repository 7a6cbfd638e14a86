"""`GET /api/gateway/keys`: the gateway's keys and the limits of their users and teams, read-only.

Never a token or its hash: a key shows its id, name, scope, public prefix, subjects, models, budget,
rates, expiry and revocation. Admin clearance only. An empty list when the gateway never ran.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from metis_core.errors import ServeAccessError
from metis_core.events.envelope import Sensitivity
from metis_core.server.api_routes import clearance_of, context_of
from metis_core.store.gateway_keys import GatewayKeyRecord, GatewayKeyStore, SubjectLimits, open_gateway_key_store


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


def _read(store: GatewayKeyStore) -> dict[str, Any]:
    keys = store.list_keys()
    subjects = sorted({("user", k.user_id) for k in keys if k.user_id} | {("team", k.team_id) for k in keys
                                                                          if k.team_id})
    limits = [found for scope, subject in subjects
              if (found := store.limits(scope, subject)) is not None]  # type: ignore[arg-type]
    return {"keys": [key_json(k) for k in keys], "limits": [limits_json(x) for x in limits]}


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
