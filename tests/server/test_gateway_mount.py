"""`metis gateway serve --web`: the gateway's worker app with `metis serve`'s routes mounted beside,
on a real uvicorn: both answer, the gateway's own auth is untouched, events stream live."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from event_payload_samples import minimal
from store_backends import _postgres_session, postgres_url  # noqa: F401
from websockets.sync.client import connect

from metis_core.errors import ServeAccessKeyMissingError
from metis_core.events.catalog import make_event
from metis_core.server.gateway_mount import BIND_HOST_ENV, build_gateway_with_web
from metis_core.trace import TraceStore

from .server_support import LiveServer


def _gateway_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, host: str = "127.0.0.1") -> None:
    monkeypatch.setenv("METIS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("METIS_GATEWAY_WORKSPACE", str(tmp_path))
    monkeypatch.setenv(BIND_HOST_ENV, host)


def test_the_gateway_with_web_serves_both_and_streams_the_workers_events(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    _gateway_env(monkeypatch, tmp_path)
    app = build_gateway_with_web()
    runtime = app.state.service.rt
    server = LiveServer(None, tmp_path, app=app)
    try:
        with server.client() as http:
            assert http.get("/healthz").status_code == 200
            assert http.get("/v1/models").status_code == 401  # the gateway's keys, not the web view's rules
            assert http.get("/api/sessions").json() == {"sessions": []}
            assert "<main" in http.get("/").text
        with connect(server.ws_url, additional_headers=server.cookie_header) as ws:
            ws.send(json.dumps({"session_ids": ["sess_gw"]}))
            assert json.loads(ws.recv(timeout=5))["kind"] == "subscribed"
            assert json.loads(ws.recv(timeout=5))["kind"] == "replay_done"
            event = runtime.bus.emit_new("session.resumed", minimal("session.resumed"), session_id="sess_gw")
            assert json.loads(ws.recv(timeout=5))["event"]["id"] == event.id
    finally:
        server.stop()
        app.state.service.close()


def test_on_postgresql_the_web_stream_carries_what_another_instance_stores(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, postgres_url: str,  # noqa: F811
) -> None:
    _gateway_env(monkeypatch, tmp_path)
    monkeypatch.setenv("METIS_DATABASE_URL", postgres_url)
    app = build_gateway_with_web()
    server = LiveServer(None, tmp_path, app=app)
    try:
        with connect(server.ws_url, additional_headers=server.cookie_header) as ws:
            ws.send(json.dumps({"session_ids": ["sess_elsewhere"]}))
            assert [json.loads(ws.recv(timeout=5))["kind"] for _ in range(2)] == ["subscribed", "replay_done"]
            event = make_event("session.resumed", minimal("session.resumed"), session_id="sess_elsewhere")
            with TraceStore(postgres_url) as another_instance:
                another_instance.append(event)
            assert json.loads(ws.recv(timeout=5))["event"]["id"] == event.id
    finally:
        server.stop()
        app.state.live_feed.close()
        app.state.service.close()


def test_the_web_routes_on_an_open_bind_need_an_admin_or_viewer_key_and_accept_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    from metis_core.gateway.keys import KeyTerms

    _gateway_env(monkeypatch, tmp_path, "0.0.0.0")
    with pytest.raises(ServeAccessKeyMissingError, match="--scope admin"):
        build_gateway_with_web()
    monkeypatch.setenv(BIND_HOST_ENV, "127.0.0.1")
    first = build_gateway_with_web()
    service = first.state.service
    model = service.keys.issue(KeyTerms(name="calls-models"))
    viewer = service.keys.issue(KeyTerms(name="web", scope="viewer"))
    service.close()
    monkeypatch.setenv(BIND_HOST_ENV, "0.0.0.0")  # as `gateway serve --web --host 0.0.0.0` builds it
    app = build_gateway_with_web()
    server = LiveServer(None, tmp_path, app=app)
    try:
        with httpx.Client(base_url=server.url, timeout=5) as http:
            assert http.get("/api/sessions").status_code == 401
            assert http.get("/api/sessions", headers={"x-api-key": model.token}).status_code == 403
            assert http.get("/api/sessions", headers={"x-api-key": viewer.token}).status_code == 200
            assert http.get("/v1/models", headers={"x-api-key": viewer.token}).status_code == 403  # reads only
            assert http.get("/v1/models", headers={"x-api-key": model.token}).status_code == 200
    finally:
        server.stop()
        app.state.service.close()
    assert app.state.service.key_check.failures.recorded == 3  # one limiter for both doors


def test_gateway_keys_and_limits_are_listed_without_token_or_hash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    from datetime import UTC, datetime
    from decimal import Decimal

    from metis_core.gateway.keys import KeyService, KeyTerms, new_subject_id
    from metis_core.store.gateway_keys import BudgetHold, SqliteGatewayKeyStore, SubjectLimits, budget_window
    from metis_core.store.records import to_us

    _gateway_env(monkeypatch, tmp_path)
    app = build_gateway_with_web()
    runtime = app.state.service.rt
    store = SqliteGatewayKeyStore(runtime.db_path)
    team = new_subject_id("team")
    issued = KeyService(store, runtime.bus).issue(KeyTerms(name="ci", team_id=team, budget_usd=Decimal("5"),
                                                           budget_period="month", rpm=60))
    store.set_limits(SubjectLimits("team", team, budget_usd=Decimal("100"), budget_period="month"))
    month = int(budget_window("month", datetime.now(UTC))[0].timestamp())
    store.add_spend("gateway_key", issued.record.id, month, Decimal("1.25"))  # a call in flight holds 0.5 more
    store.reserve("rsv_1", [BudgetHold("gateway_key", issued.record.id, month, Decimal("5"))], Decimal("0.5"),
                  to_us(datetime.now(UTC)), to_us(datetime.now(UTC)) + 60_000_000)
    store.close()
    server = LiveServer(None, tmp_path, app=app)
    try:
        response = httpx.get(server.url + "/api/gateway/keys", headers=server.cookie_header, timeout=5)
    finally:
        server.stop()
        app.state.service.close()
    assert response.status_code == 200
    [key] = response.json()["keys"]
    assert key["id"] == issued.record.id and key["prefix"] == issued.record.prefix and key["budget_usd"] == "5"
    assert key["scope"] == "model"
    assert (key["spent_usd"], key["reserved_usd"], key["remaining_usd"]) == ("1.25", "0.5", "3.25")
    assert response.json()["limits"] == [{"scope": "team", "subject_id": team, "budget_usd": "100",
                                          "budget_period": "month", "rpm": None, "tpm": None, "spent_usd": "0",
                                          "reserved_usd": "0", "remaining_usd": "100"}]
    assert issued.token not in response.text and issued.record.secret_hash not in response.text


def test_gateway_serve_web_answers_the_operators_host_names_on_both_doors_and_refuses_others(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    from metis_core.gateway.web_guard import ALLOWED_HOSTS_ENV, ALLOWED_ORIGINS_ENV

    _gateway_env(monkeypatch, tmp_path)
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, "metis.lan")  # as `gateway serve --allowed-host metis.lan` hands it on
    monkeypatch.setenv(ALLOWED_ORIGINS_ENV, "https://metis.example")
    app = build_gateway_with_web()
    server = LiveServer(None, tmp_path, app=app)
    try:
        with server.client() as http:
            for path in ("/healthz", "/api/sessions"):
                assert http.get(path, headers={"host": f"metis.lan:{server.port}"}).status_code == 200, path
                assert http.get(path, headers={"host": f"evil.example:{server.port}"}).status_code == 421, path
            allowed = http.post("/api/chat/sessions", json={}, headers={"origin": "https://metis.example"})
            assert allowed.status_code == 201
            refused = http.post("/api/chat/sessions", json={}, headers={"origin": "http://evil.example"})
            assert refused.status_code == 403
    finally:
        server.stop()
        app.state.service.close()
