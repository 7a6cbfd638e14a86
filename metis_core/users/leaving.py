"""A user's record exported whole, or forgotten.

A user's content is what the gateway recorded under their keys: one session per call, in the
workspace `gateway:<key id>`, with its messages and trace events. Export writes all of it, their
registry entry, their keys (never a secret hash) and the audit events that name them. Forget
deletes those sessions with their messages and non-audit events (as `metis sessions delete` does),
clears the name and e-mail, revokes the keys, and leaves the audit facts: the pseudonymous id,
counts, spend counters. Both acts are themselves audit events (`analytics.user_*`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from metis_core.errors import UserNotFoundError
from metis_core.events.catalog import AUDIT_EVENT_TYPES, make_event
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor, Event
from metis_core.store.gateway_keys import GatewayKeyRecord, GatewayKeyStore
from metis_core.store.sessions import SessionStore
from metis_core.store.users import UserRecord, UserStore
from metis_core.trace.store import TraceStore

EXPORT_FORMAT = "metis.user-export/1"
SUBJECT_FIELDS = ("user_id", "subject_id")
"""Payload fields through which an audit event names a user."""


def _keys_of(keys: GatewayKeyStore, user_id: str) -> list[GatewayKeyRecord]:
    return [k for k in keys.list_keys() if k.user_id == user_id]


def _known(users: UserStore, keys: list[GatewayKeyRecord], user_id: str) -> UserRecord | None:
    record = users.find(user_id)
    if record is None and not keys:
        raise UserNotFoundError(f"no user {user_id}: not in the registry and no gateway key names it; "
                                "`metis users list` and `metis gateway keys list` show who is known")
    return record


def user_session_ids(sessions: SessionStore, keys: list[GatewayKeyRecord]) -> list[str]:
    """The sessions the gateway recorded under these keys, oldest first."""
    found = [s for key in keys for s in sessions.list_sessions(limit=10_000_000, workspace=f"gateway:{key.id}")]
    return [s.id for s in sorted(found, key=lambda s: (s.created_at, s.id))]


def _audit_naming(trace: TraceStore, user_id: str) -> list[Event]:
    return [e for e in trace.events(types=sorted(AUDIT_EVENT_TYPES))
            if any(e.payload.get(name) == user_id for name in SUBJECT_FIELDS)]


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


def _key_json(key: GatewayKeyRecord) -> dict[str, Any]:
    return {"id": key.id, "name": key.name, "prefix": key.prefix, "team_id": key.team_id, "scope": key.scope,
            "allowed_models": list(key.allowed_models) if key.allowed_models else None,
            "budget_usd": format(key.budget_usd, "f") if key.budget_usd is not None else None,
            "budget_period": key.budget_period, "created_at": _iso(key.created_at),
            "expires_at": _iso(key.expires_at), "revoked_at": _iso(key.revoked_at)}


def export_user(user_id: str, *, users: UserStore, keys: GatewayKeyStore, sessions: SessionStore,
                trace: TraceStore) -> bytes:
    """Everything the record holds about `user_id`, as one JSON document; records analytics.user_exported."""
    owned = _keys_of(keys, user_id)
    record = _known(users, owned, user_id)
    documents: list[dict[str, Any]] = []
    message_count = event_count = 0
    for session_id in user_session_ids(sessions, owned):
        messages = [m.model_dump(mode="json", exclude_none=True) for m in sessions.load_messages(session_id)]
        events = [e.model_dump(mode="json") for e in trace.replay(session_id)]
        message_count, event_count = message_count + len(messages), event_count + len(events)
        documents.append({"session": sessions.get_session(session_id).to_json_dict(),
                          "messages": messages, "events": events})
    audit = [e.model_dump(mode="json") for e in _audit_naming(trace, user_id)]
    now = datetime.now(UTC)
    trace.append(make_event("analytics.user_exported", {
        "user_id": user_id, "sessions": len(documents), "messages": message_count,
        "events": event_count + len(audit), "exported_at": now,
    }, session_id=SYSTEM_SESSION_ID, actor=Actor.USER))
    return orjson.dumps({
        "format": EXPORT_FORMAT, "exported_at": now.isoformat(), "user_id": user_id,
        "user": record.as_json() if record is not None else None,
        "keys": [_key_json(k) for k in owned], "sessions": documents, "audit_events": audit,
    }, option=orjson.OPT_INDENT_2)


@dataclass(frozen=True, slots=True)
class ForgetResult:
    user_id: str
    sessions_deleted: int
    messages_deleted: int
    events_deleted: int
    audit_events_kept: int
    keys_revoked: int


def forget_user(user_id: str, *, users: UserStore, keys: GatewayKeyStore, sessions: SessionStore,
                trace: TraceStore) -> ForgetResult:
    """Erase `user_id`'s content and personal data; keep the audit facts. Records
    gateway.key_revoked for each key still live and analytics.user_forgotten. Safe to run again."""
    owned = _keys_of(keys, user_id)
    _known(users, owned, user_id)
    now = datetime.now(UTC)
    revoked = 0
    for key in owned:
        if key.revoked_at is None and keys.revoke(key.id, now, "admin_revoke"):
            revoked += 1
            trace.append(make_event("gateway.key_revoked", {"gateway_key_id": key.id, "revoked_at": now,
                                                            "reason": "admin_revoke"},
                                    session_id=SYSTEM_SESSION_ID, actor=Actor.SYSTEM))
    trace.flush()
    messages = events = kept = 0
    session_ids = user_session_ids(sessions, owned)
    for session_id in session_ids:
        deletion = sessions.delete_session(session_id)
        messages, events, kept = (messages + deletion.messages_deleted, events + deletion.events_deleted,
                                  kept + deletion.audit_events_kept)
    users.forget(user_id)
    sessions.reclaim_deleted()
    result = ForgetResult(user_id, len(session_ids), messages, events, kept, revoked)
    trace.append(make_event("analytics.user_forgotten", {
        "user_id": user_id, "sessions_deleted": result.sessions_deleted, "messages_deleted": messages,
        "events_deleted": events, "audit_events_kept": kept, "keys_revoked": revoked, "forgotten_at": now,
    }, session_id=SYSTEM_SESSION_ID, actor=Actor.USER))
    return result
