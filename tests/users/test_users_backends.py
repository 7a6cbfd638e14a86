"""`forget_user` on both backends: afterwards no table of the database holds the user's words,
name or e-mail; another user's record and the audit facts stay."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
from event_payload_samples import MINIMAL_PAYLOADS
from store_backends import scalar_on

from metis_core.events.catalog import make_event
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor
from metis_core.messages import user_message
from metis_core.store import SessionStore
from metis_core.store.gateway_keys import GatewayKeyRecord, open_gateway_key_store
from metis_core.store.users import UserStore
from metis_core.trace import TraceStore
from metis_core.users import export_user, forget_user

SECRET = "PURPLE-ELEPHANT-42"


def _key(key_id: str, user_id: str) -> GatewayKeyRecord:
    return GatewayKeyRecord(id=key_id, name=key_id, prefix=f"mk_{key_id[-8:]}", secret_hash=key_id * 2,
                            user_id=user_id, team_id=None, allowed_models=None, budget_usd=None, budget_period=None,
                            rpm=None, tpm=None, created_at=datetime.now(UTC))


def _tables_holding(location: Path | str, text: str) -> list[str]:
    if isinstance(location, Path):
        return ["the file"] if any(text.encode() in p.read_bytes() for p in location.parent.glob(location.name + "*")) \
            else []
    names = scalar_on(location, "SELECT string_agg(table_name, ',') FROM information_schema.tables "
                                "WHERE table_schema = current_schema()")
    return [t for t in str(names).split(",")
            if scalar_on(location, f"SELECT COUNT(*) FROM {t} x WHERE x::text LIKE '%{text}%'")]


def test_forget_leaves_no_trace_of_the_user_in_any_table(db_location: Path | str, tmp_path: Path) -> None:
    users, keys = UserStore(db_location), open_gateway_key_store(db_location)
    sessions, trace = SessionStore(db_location), TraceStore(db_location)
    try:
        ada = users.create("usr_01J000000000000000000000AD", name="Ada Lovelace", email="ada@example.org",
                           team_id=None).id
        keys.insert_key(_key("gk_01J000000000000000000000KA", ada))
        keys.insert_key(_key("gk_01J000000000000000000000KB", "usr_01J000000000000000000000BB"))
        for key_id, words in (("gk_01J000000000000000000000KA", SECRET), ("gk_01J000000000000000000000KB", "kept")):
            session = sessions.create_session(f"gateway:{key_id}")
            sessions.append_message(user_message(f"the word is {words}", session_id=session.id))
            shared = {**MINIMAL_PAYLOADS["turn.started"], "user_message_text_redacted": f"the word is {words}"}
            trace.append(make_event("turn.started", shared, session_id=session.id))  # share_traces on
        trace.flush()
        exported = orjson.loads(export_user(ada, users=users, keys=keys, sessions=sessions, trace=trace))
        assert SECRET in orjson.dumps(exported).decode()

        result = forget_user(ada, users=users, keys=keys, sessions=sessions, trace=trace)
        trace.flush()
        assert (result.sessions_deleted, result.messages_deleted, result.keys_revoked) == (1, 1, 1)
        for gone in (SECRET, "Ada Lovelace", "ada@example.org"):
            assert _tables_holding(db_location, gone) == [], gone
        assert _tables_holding(db_location, "kept")  # the other user's session
        assert keys.get_key("gk_01J000000000000000000000KA").revoked_at is not None
        assert users.get(ada).status == "forgotten"
        assert [e.actor for e in trace.events(types=["analytics.user_forgotten"])] == [Actor.USER]
        assert trace.events(types=["gateway.key_revoked"])[0].session_id == SYSTEM_SESSION_ID
    finally:
        trace.close()
        sessions.close()
        keys.close()
        users.close()
