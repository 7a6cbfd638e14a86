"""`metis serve` takes gateway keys of scope admin or viewer, checked against the key store of
either backend: a real uvicorn on 127.0.0.1 guarded as a non-loopback bind would be.

Each bad key is checked three ways: the HTTP status and the message the client reads, the
`gateway.auth_failed` event on the record (no key material), and that nothing else was answered.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from store_backends import _postgres_session, db_location  # noqa: F401

from metis_core.errors import ServeAccessKeyMissingError
from metis_core.gateway.key_check import KeyCheck
from metis_core.gateway.keys import KeyService, KeyTerms
from metis_core.server.access import ServerAccess
from metis_core.store.gateway_keys import GatewayKeyStore, open_gateway_key_store

from .conftest import Served
from .server_support import LiveServer, chat_turn, script_weather_turn


@dataclass
class Guarded:
    server: LiveServer
    keys: KeyService
    store: GatewayKeyStore
    served: Served

    def issue(self, scope: str, **terms: Any) -> tuple[str, str]:
        issued = self.keys.issue(KeyTerms(name=f"{scope}-key", scope=scope, **terms))  # type: ignore[arg-type]
        return issued.record.id, issued.token

    def get(self, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
        return httpx.get(self.server.url + path, headers=headers or {}, timeout=10)

    def failures(self) -> list[dict[str, Any]]:
        self.served.runtime.bus.flush()
        return [e.payload for e in self.served.runtime.trace.events(types=["gateway.auth_failed"])]


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.fixture
def guarded(served: Served, db_location: Path | str) -> Iterator[Guarded]:  # noqa: F811
    """A server that asks every client for a key (as on 0.0.0.0), its keys on SQLite or PostgreSQL."""
    store = open_gateway_key_store(db_location)
    keys = KeyService(store, served.runtime.bus)
    access = ServerAccess(KeyCheck(keys, failure_events_per_minute=100), loopback_bind=False)
    server = LiveServer(served.runtime, served.workspace, access=access)
    yield Guarded(server, keys, store, served)
    server.stop()
    store.close()


def test_an_admin_key_sees_private_content_and_a_viewer_key_only_reads_below_it(guarded: Guarded) -> None:
    _, admin = guarded.issue("admin")
    _, viewer = guarded.issue("viewer")
    script_weather_turn(guarded.served)
    session_id, _ = chat_turn(guarded.served, "allow_once")
    assert guarded.get(f"/api/sessions/{session_id}/messages", bearer(admin)).status_code == 200
    assert guarded.get(f"/api/sessions/{session_id}/messages", {"x-api-key": admin}).status_code == 200
    refused = guarded.get(f"/api/sessions/{session_id}/messages", bearer(viewer))
    assert refused.status_code == 403 and "scope admin" in refused.json()["detail"]
    assert guarded.get("/api/gateway/keys", bearer(viewer)).status_code == 403
    chat = httpx.post(guarded.server.url + "/api/chat/sessions", json={}, headers=bearer(viewer))
    assert chat.status_code == 403
    trace = guarded.get(f"/api/sessions/{session_id}/trace", bearer(viewer)).json()["events"]
    called = next(e for e in trace if e["type"] == "tool.called")
    assert called["payload"] is None and called["withheld"] is True
    full = guarded.get(f"/api/sessions/{session_id}/trace", bearer(admin)).json()["events"]
    assert next(e for e in full if e["type"] == "tool.called")["payload"]["tool_name"] == "get_weather"
    listed = guarded.get("/api/gateway/keys", bearer(admin))
    assert sorted(k["scope"] for k in listed.json()["keys"]) == ["admin", "viewer"]
    assert admin not in listed.text and viewer not in listed.text
    assert guarded.failures() == []


def test_a_model_key_is_refused_with_403_naming_the_scope_needed(guarded: Guarded) -> None:
    key_id, model_key = guarded.issue("model")
    response = guarded.get("/api/sessions", bearer(model_key))
    assert response.status_code == 403
    detail = response.json()["detail"]
    assert "scope 'model'" in detail and "admin or viewer" in detail and "--scope admin" in detail
    assert response.json()["error"] == "GatewayScopeError"
    [failed] = guarded.failures()
    assert failed == {"reason": "insufficient_scope", "inbound_shape": "serve", "gateway_key_id": key_id,
                      "token_hash_prefix": failed["token_hash_prefix"]}
    assert model_key not in response.text


@pytest.mark.parametrize(("headers", "reason"), [
    ({}, "missing_token"),
    ({"authorization": "Basic YWRtaW46c2VjcmV0"}, "missing_token"),
    ({"authorization": "Bearer"}, "missing_token"),
    ({"authorization": "Token mk_ABCDEFGH_" + "y" * 43}, "missing_token"),
    ({"authorization": "Bearer mk_short"}, "invalid_token"),
    ({"authorization": "Bearer mk_ABCDEFGH_" + "x" * 43}, "invalid_token"),
    ({"x-api-key": "sk-ant-not-a-gateway-key"}, "invalid_token"),
])
def test_a_missing_or_malformed_key_is_401_and_recorded(
    guarded: Guarded, headers: dict[str, str], reason: str,
) -> None:
    response = guarded.get("/api/sessions", headers)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"] == "GatewayAuthError" and "sessions" not in response.json()
    [failed] = guarded.failures()
    assert failed["reason"] == reason and failed["inbound_shape"] == "serve"
    for value in headers.values():
        assert value.split()[-1] not in json.dumps(failed)


def test_a_revoked_or_expired_key_is_refused(guarded: Guarded) -> None:
    revoked_id, revoked = guarded.issue("admin")
    _, working = guarded.issue("admin")
    assert guarded.get("/api/sessions", bearer(revoked)).status_code == 200
    guarded.keys.revoke(revoked_id)
    response = guarded.get("/api/sessions", bearer(revoked))
    assert response.status_code == 401 and "revoked" in response.json()["detail"]
    expired_id, expired = guarded.issue("viewer", expires_at=datetime.now(UTC) - timedelta(minutes=1))
    response = guarded.get("/api/sessions", bearer(expired))
    assert response.status_code == 401 and "expired" in response.json()["detail"]
    assert guarded.get("/api/sessions", bearer(working)).status_code == 200
    assert [(f["reason"], f["gateway_key_id"]) for f in guarded.failures()] == [
        ("key_revoked", revoked_id), ("key_revoked", expired_id)]


def test_a_revocation_by_another_process_takes_effect_within_a_second(
    guarded: Guarded, db_location: Path | str,  # noqa: F811
) -> None:
    import time

    from metis_core.events.bus import EventBus

    key_id, admin = guarded.issue("admin")
    assert guarded.get("/api/sessions", bearer(admin)).status_code == 200
    other = open_gateway_key_store(db_location)  # as `metis gateway keys revoke` on the same database
    with EventBus() as bus:
        KeyService(other, bus).revoke(key_id)
    other.close()
    time.sleep(1.05)  # KEY_CACHE_SECONDS: a checked key's row is reused for at most a second
    assert guarded.get("/api/sessions", bearer(admin)).status_code == 401


def test_a_rotated_key_keeps_its_scope_and_works_through_the_grace_only(guarded: Guarded) -> None:
    old_id, old = guarded.issue("viewer")
    rotated = guarded.keys.rotate(old_id, grace=timedelta(hours=1))
    assert rotated.record.scope == "viewer"
    for token in (old, rotated.token):
        assert guarded.get("/api/sessions", bearer(token)).status_code == 200
        assert guarded.get("/api/gateway/keys", bearer(token)).status_code == 403  # still a viewer
    # A second rotation whose grace ended an hour ago: the first successor stops at its next use.
    latest = guarded.keys.rotate(rotated.record.id, grace=timedelta(hours=1),
                                 now=datetime.now(UTC) - timedelta(hours=2))
    response = guarded.get("/api/sessions", bearer(rotated.token))
    assert response.status_code == 401 and "grace period is over" in response.json()["detail"]
    assert guarded.get("/api/sessions", bearer(latest.token)).status_code == 200
    assert guarded.store.get_key(rotated.record.id).revoke_reason == "grace_period_expired"


def test_the_websocket_takes_the_key_in_its_query_and_refuses_a_bad_one_at_the_handshake(guarded: Guarded) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    _, admin = guarded.issue("admin")
    _, model_key = guarded.issue("model")
    with pytest.raises(InvalidStatus) as refused:
        connect(guarded.server.ws_url)
    assert refused.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as refused:
        connect(guarded.server.ws_url + f"?token={model_key}")
    assert refused.value.response.status_code == 403
    assert b"admin or viewer" in refused.value.response.body
    with connect(guarded.server.ws_url + f"?token={admin}") as ws:
        ws.send(json.dumps({}))
        assert json.loads(ws.recv(timeout=5))["kind"] == "subscribed"
    with connect(guarded.server.ws_url, additional_headers=bearer(admin)) as ws:
        ws.send(json.dumps({}))
        assert json.loads(ws.recv(timeout=5))["kind"] == "subscribed"


def test_a_key_in_the_query_of_a_plain_request_is_not_read(guarded: Guarded) -> None:
    """Only a WebSocket (which a browser cannot give headers) reads `?token=`: URLs end up in logs."""
    _, admin = guarded.issue("admin")
    assert guarded.get(f"/api/sessions?token={admin}").status_code == 401


def test_the_page_and_its_scripts_are_served_without_a_key_and_without_an_auth_event(guarded: Guarded) -> None:
    assert guarded.get("/").status_code == 200
    assert guarded.get("/static/app.js").status_code == 200
    assert guarded.failures() == []


def test_serving_beyond_loopback_needs_a_live_admin_or_viewer_key(served: Served, db_location: Path | str) -> None:  # noqa: F811
    store = open_gateway_key_store(db_location)
    try:
        keys = KeyService(store, served.runtime.bus)
        check = KeyCheck(keys)
        assert ServerAccess.for_bind("127.0.0.1", check).keys_required is False
        keys.issue(KeyTerms(name="calls-models"))
        revoked = keys.issue(KeyTerms(name="old-admin", scope="admin"))
        keys.revoke(revoked.record.id)
        keys.issue(KeyTerms(name="expired", scope="viewer", expires_at=datetime.now(UTC) - timedelta(seconds=1)))
        with pytest.raises(ServeAccessKeyMissingError, match="metis gateway keys issue --name web --scope admin"):
            ServerAccess.for_bind("0.0.0.0", check)
        with pytest.raises(ServeAccessKeyMissingError, match="require-key"):
            ServerAccess.for_bind("127.0.0.1", check, require_key=True)
        keys.issue(KeyTerms(name="web", scope="viewer"))
        assert ServerAccess.for_bind("0.0.0.0", check).keys_required is True
        assert ServerAccess.for_bind("::1", check).keys_required is False
    finally:
        store.close()
